"""Deploying built packages into an OPP tree (`opbuild install`)."""
