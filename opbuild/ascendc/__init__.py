"""Ascend C: CANN's op-project front end (msopgen's IR JSON and project skeleton, the Ascend C importer)."""
