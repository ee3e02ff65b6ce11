"""API keys: the ``Authorization`` header, key hashes and the per-container cache."""
