"""DynamoDB access. The table layout lives in ``items``; every request goes through here."""
