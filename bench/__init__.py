"""What only a benchmark can show: handler overhead, cost per call, cold init (``make bench``)."""
