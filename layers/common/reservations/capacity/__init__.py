"""The capacity slice: release, reclaim, the reclaim's plan. No other slice uses any of it."""
