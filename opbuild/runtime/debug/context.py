"""Which `.om` model (and node) a launch belongs to: set by OmRunner.run, read by the dump's
selection (acl.json's `model_name`, and `layer`, which names ops or nodes) and written into each
launch's index."""

from __future__ import annotations

import contextvars

CURRENT_MODEL: contextvars.ContextVar[str | None] = contextvars.ContextVar("opbuild_current_model", default=None)
"""The name of the `.om` model whose node is being run, or None (a single-op call)."""

CURRENT_NODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("opbuild_current_node", default=None)
"""The name of the model node being run, or None."""
