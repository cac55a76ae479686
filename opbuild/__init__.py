"""opbuild: a build system and runtime for CANN-style (Ascend) operator packages."""


def version() -> str:
    """The installed distribution's version (pyproject.toml's), or "unknown" when opbuild runs
    from a source tree that was never installed: `opbuild --version`, toolkit version.info and the
    .om compiler version all say this."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("opbuild")
    except PackageNotFoundError:
        return "unknown"
