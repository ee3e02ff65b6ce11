"""The local stack: the AWS emulator provisioned from template.yaml, and what runs on it."""
