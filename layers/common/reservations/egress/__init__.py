"""Outbound HTTP to endpoints customers name (webhooks): where request forgery must be
impossible. Depends on the rules and the models only; the functions wire it into the logic."""
