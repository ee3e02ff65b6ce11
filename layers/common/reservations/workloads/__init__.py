"""The workloads slice (the platform scheduler's placements and ends.). No other slice uses any of it."""
