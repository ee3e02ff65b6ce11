"""The workloads slice: the scheduler's placements and ends. No other slice uses any of it."""
