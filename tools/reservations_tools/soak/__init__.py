"""The soak's auditor: what happened during a run (the node feeds' events, what each
follower received, every call's status, the usage rows) checked against the contract's
invariants, from the record alone (``python -m reservations_tools.soak.audit RECORD``).

It reads the events as the API serves them (CloudEvents) and replays them with its own
rules, written from docs/api.md; it imports nothing of the service, so a rule gone wrong in
the service cannot excuse itself here."""
