"""The webhooks slice (subscriptions, the fan-out, the sender, deliveries.). No other slice uses any of it."""
