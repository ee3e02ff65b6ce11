"""The fleet file and its loader (`reservations-fleet`): an operator tool, not deployed."""
