"""The reference node-side consumer of spot-termination messages (see docs/node-agent.md)."""
