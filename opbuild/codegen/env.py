"""The Jinja2 environment of opbuild's generators (templates/ at the repository root)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

from opbuild.runtime_paths import templates_dir

TEMPLATES_DIR: Path = templates_dir()
"""templates/ at the repository root (or its copy inside an installed wheel)."""


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """One environment per process: strict, whitespace-exact, templates compiled once."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=False,
        cache_size=-1,
    )


@functools.lru_cache(maxsize=None)
def template(name: str) -> jinja2.Template:
    return environment().get_template(name)


def render(name: str, **context: Any) -> str:
    return template(name).render(**context)
