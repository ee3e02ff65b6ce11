"""The usage slice: every unit-second of a node counted once, in one of eight states
(``rules/states.py``), folded from the node's events (``rules/ledger.py``) and split into
rows by period (``rules/rows.py``); ``GET /v1/usage`` (``read.py``), and the checkpoints the
relay keeps so that a page reads only its periods' changes (``checkpoints.py``). No other
slice uses any of it."""
