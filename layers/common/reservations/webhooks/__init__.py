"""The webhooks slice: subscriptions, fan-out, sender, deliveries. No other slice uses any of it."""
