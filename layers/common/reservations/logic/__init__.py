"""Use cases: one module per endpoint, called by the thin Lambda handlers."""
