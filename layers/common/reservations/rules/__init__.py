"""Pure domain rules: no I/O, no clock of their own (``now`` is always a parameter)."""
