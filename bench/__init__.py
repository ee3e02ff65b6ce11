"""Issue 5's benchmark: the budgets of shared/design.md, measured (never asserted).

    make bench        # or: .venv/bin/python -m bench.run

Prints one table per budget and writes the same figures to ``bench/results.json``.
"""
