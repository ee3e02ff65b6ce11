"""The fleet file: local data for runs, demos and black-box tests (see docs/fleet.md)."""
