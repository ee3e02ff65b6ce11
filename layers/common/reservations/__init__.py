"""GPU reservations service: the one package every function, tool and test imports.

Arranged by feature around a kernel that names none:

- ``kernel``: ids, times, the caller and its API keys, the errors, the event envelope and
  its log, the write pipeline and idempotency, retries, settings, observability, the
  resolver and the OpenAPI declarations, the DynamoDB codec, actions and transactions.
- ``nodes``: a node's partition (its units, reservations and workloads), its registration
  and reads; what every slice writing a node's partition shares.
- ``lifecycle``: a reservation made, read, listed, changed, cancelled, re-affirmed, by the
  clock, and kept as history.
- ``capacity``: release and reclaim, and the lending policy.
- ``workloads``: the platform scheduler's placements and ends.
- ``terminations``: the outbox, the node queues, a node's reports, the sweeper.
- ``events``: the feeds, the relay and its outlets, who may see which event.
- ``webhooks``: subscriptions, the fan-out, the sender, deliveries, egress.

Inside a slice, one way: ``endpoints`` / ``wiring`` -> use cases and ``ports`` -> ``table``
/ ``egress`` -> ``rules`` -> ``models``. Slices import the kernel, and one another only
through a slice's ``__init__``; the kernel imports no slice. ``endpoints`` (this package's
own) lists every slice's endpoints for the OpenAPI document. The fleet file and its loader
are an operator tool (``reservations_tools.fleet``), not here.
"""
