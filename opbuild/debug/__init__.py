"""Debugging tools of the command line: `opbuild compare` (compare.py) and the `compare`, `prof` and
`memcheck` subcommands (cli.py). What they read is written by opbuild.runtime.debug."""
