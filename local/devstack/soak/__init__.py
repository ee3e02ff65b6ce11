"""``make soak``: the local stack under seeded concurrent actors and faults, audited from
its feeds by ``reservations_tools.soak`` (``run.py`` says how; docs/reliability.md)."""
