"""Domain entities, API shapes and errors."""
