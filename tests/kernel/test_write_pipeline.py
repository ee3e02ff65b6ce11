"""What the write pipeline does for every use case, checked once over one of them: the
fingerprint a key's record keeps, the 409 of a write that lost every race naming what it
wrote, the first answer a refusal gives way to, and a reservation read back from the node's
history. (A file of its own, and small: ``make mutate`` runs a few tests of each file that
reaches a function, so a pipeline mutant always runs these.)"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import Conflict, NotFound
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.lifecycle.errors import ReservationNotActive
from reservations.nodes.models.partition import ReservationStatus
from tests.capacity.test_reclaim import Conflicting
from tests.support.fakes import FakeClock, ports
from tests.support.use_cases import BROKER, NOW, OPERATOR, UNITS
from tests.support.writes import end_workload, place_workload, reclaim, release
from tests.workloads.test_workloads import SCHEDULER, body, node_store

pytestmark = pytest.mark.disable_socket


def test_a_keys_record_keeps_the_fingerprint_of_the_body_as_the_contract_spells_it(
    store, queue, clock
):
    """Records outlive a deploy (24 hours): the fingerprint is the validated body with the
    contract's field names, its defaults in, its unit ids lower-cased, in canonical JSON."""
    raw = RawBody(json.dumps({"unitIds": [UNITS[0].upper()]}))
    reclaim(BROKER, "node-a", "res-1", raw, "key-1", ports(store, clock, queue))
    [record] = store.answers.values()
    canonical = (
        '{"body":{"dryRun":false,"reason":null,"unitIds":["0000:04:00.0"]},'
        '"method":"POST","path":"/v1/nodes/node-a/reservations/res-1/reclaim"}'
    )
    assert record.request.request_hash == hashlib.sha256(canonical.encode()).hexdigest()


def test_a_write_that_loses_every_race_is_409_naming_what_it_wrote(clock: FakeClock) -> None:
    table = Conflicting(clock)
    table.nodes = node_store(clock).nodes
    table.losses = MAX_ATTEMPTS
    raw = RawBody(json.dumps(body(workload_id="vm-new")))
    with pytest.raises(Conflict) as lost:
        place_workload(SCHEDULER, "node-a", raw, None, ports(table, clock))
    assert lost.value.message == "node node-a kept changing while placing vm-new; retry the request"


def test_a_refusal_that_the_keys_committed_first_request_explains_is_its_first_answer(
    clock: FakeClock,
) -> None:
    """An end retried with its key after the workload is gone (because it ended it): 204
    again, not the 404 the same request without the key hears."""
    table = node_store(clock)
    first = end_workload(SCHEDULER, "node-a", "vm-old", "end-1", ports(table, clock))
    again = end_workload(SCHEDULER, "node-a", "vm-old", "end-1", ports(table, clock))
    assert (again.status, again.body) == (first.status, first.body) == (204, "")
    with pytest.raises(NotFound):
        end_workload(SCHEDULER, "node-a", "vm-old", None, ports(table, clock))


def test_a_write_on_an_ended_reservation_is_409_while_it_is_retained_then_404(store, clock):
    """res-1 cancelled and moved to the node's history: not active while kept, then unknown."""
    partition = store.nodes["node-a"]
    ended = replace(partition.reservations.pop("res-1"), status=ReservationStatus.CANCELLED)
    raw = RawBody(json.dumps({"unitIds": [UNITS[0]]}))
    for retained_until, refusal in (
        (NOW + timedelta(days=1), ReservationNotActive),
        (NOW, NotFound),
    ):
        partition.history["res-1"] = replace(ended, retained_until=retained_until)
        with pytest.raises(refusal):
            release(OPERATOR, "node-a", "res-1", raw, None, ports(store, clock))


def test_a_keyed_write_its_own_keys_first_answer_cancelled_replays_it_without_a_retry(
    clock: FakeClock, said
) -> None:
    """The same keyed placement sent twice at once: the one that commits second meets the
    first one's record in its transaction, and answers with it there and then."""
    table = node_store(clock)
    raw = RawBody(json.dumps(body(workload_id="vm-new")))
    first = []
    table.between_read_and_write.append(
        lambda: first.append(place_workload(SCHEDULER, "node-a", raw, "key-9", ports(table, clock)))
    )
    reads, writes = table.reads, table.writes
    second = place_workload(SCHEDULER, "node-a", raw, "key-9", ports(table, clock))
    assert (second.status, second.body) == (first[0].status, first[0].body)
    assert (table.reads - reads, table.writes - writes) == (2, 2)  # one attempt each
    assert "lost a race" not in said.text
