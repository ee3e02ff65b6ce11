"""Operator commands for a deployed (or local) reservations stack."""
