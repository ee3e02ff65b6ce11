"""The usage slice: every unit-second of a node counted once, in one of eight states
(``rules/states.py``), folded from the node's events (``rules/ledger.py``) and split into
rows by period (``rules/rows.py``). Pure so far: no table, no endpoint (docs/usage.md).
No other slice uses any of it."""
