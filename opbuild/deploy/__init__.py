"""Deploying built packages: CANN's `.run` installer (`opbuild pack`, pack.py), whose bash
scripts (scripts/: install.sh, uninstall.sh, help.info, the header) also do `opbuild install`
(install.py), and the environment of C programs (`opbuild env`, `opbuild config`: setenv.py)."""
