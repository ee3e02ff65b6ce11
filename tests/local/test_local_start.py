"""How ``make run`` starts its functions fast, and where its webhook sender sends.

- The templates its ``sam local`` processes read name no layer (the layer is in the image:
  a layer in the template makes SAM build an image for every container it creates), and
  share the functions out: each function in exactly one process.
- The image with the layer is rebuilt when the layer's files change, and holds SAM's
  runtime emulator and the layer where SAM would have put them.
- The sender's containers go on the host's network, with the runtime emulator on the port
  SAM talks to, so that 127.0.0.1 is this machine; its variables name 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from devstack import image, local_templates, run, sam_cli, template

pytestmark = pytest.mark.disable_socket

SOURCE = template.document(template.TEMPLATE)


def functions(document: dict[str, Any]) -> set[str]:
    return {n for n, r in document["Resources"].items() if r["Type"] == local_templates.FUNCTION}


def layers_named(document: dict[str, Any]) -> list[str]:
    found = [n for n, r in document["Resources"].items() if "Layer" in r["Type"]]
    found += ["Globals"] if "Layers" in document.get("Globals", {}).get("Function", {}) else []
    return found + [
        n for n, r in document["Resources"].items() if "Layers" in r.get("Properties", {})
    ]


@pytest.mark.parametrize("kind", local_templates.KINDS)
def test_no_local_template_names_a_layer(kind: str) -> None:
    assert layers_named(SOURCE), "the deployed template has its layer"
    assert layers_named(local_templates.local_template(SOURCE, kind)) == []


def test_every_local_function_has_at_least_the_local_timeout_and_keeps_a_longer_one() -> None:
    """An API function's 10 s would make its first call under sam local, on a busy machine,
    give up with a 503 before it reached the table; a longer timeout is kept."""
    timeouts = {
        name: resource["Properties"]["Timeout"]
        for kind in local_templates.KINDS
        for name, resource in local_templates.local_template(SOURCE, kind)["Resources"].items()
        if resource["Type"] == local_templates.FUNCTION
    }
    assert SOURCE["Globals"]["Function"]["Timeout"] < local_templates.LOCAL_TIMEOUT_SECONDS
    assert timeouts["ReclaimFunction"] == local_templates.LOCAL_TIMEOUT_SECONDS
    assert (
        timeouts["ClockFunction"] == SOURCE["Resources"]["ClockFunction"]["Properties"]["Timeout"]
    )
    assert min(timeouts.values()) == local_templates.LOCAL_TIMEOUT_SECONDS


def test_each_function_is_in_exactly_one_process() -> None:
    by_kind = {
        k: functions(local_templates.local_template(SOURCE, k)) for k in local_templates.KINDS
    }
    assert by_kind["sender"] == {"WebhookSenderFunction"}
    assert {"ListUnitsFunction", "ReclaimFunction", "NotFoundFunction"} <= by_kind["api"]
    assert {"TerminationReportsFunction", "EventRelayFunction", "SweeperFunction"} <= by_kind[
        "triggered"
    ]
    assert sum(len(names) for names in by_kind.values()) == len(functions(SOURCE))
    assert set().union(*by_kind.values()) == functions(SOURCE)
    assert all(local_templates.is_api(SOURCE["Resources"][n]) for n in by_kind["api"])


def test_the_templates_keep_the_parameters_the_stack_overrides(tmp_path: Path) -> None:
    built = tmp_path / "template.yaml"
    built.write_text(template.TEMPLATE.read_text())
    written = local_templates.write_local_templates(built)
    assert set(written) == set(local_templates.KINDS)
    for path in written.values():
        assert path.parent == tmp_path  # beside the built template: its code paths hold
        document = json.loads(path.read_text())
        assert "WebhookAllowLocalReceiver" in document["Parameters"]


def context_files(context: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def test_the_image_holds_the_runtime_emulator_and_the_layer_at_opt(tmp_path: Path) -> None:
    (tmp_path / "python" / "reservations").mkdir(parents=True)
    (tmp_path / "python" / "reservations" / "__init__.py").write_text("VERSION = 1\n")
    files = context_files(image.build_context("base:tag", tmp_path, "x86_64"))
    dockerfile = files["Dockerfile"].decode()
    assert dockerfile.startswith("FROM base:tag\n")
    assert "COPY aws-lambda-rie-x86_64 /var/rapid/aws-lambda-rie" in dockerfile
    assert "COPY layer /opt" in dockerfile
    assert files["layer/python/reservations/__init__.py"] == b"VERSION = 1\n"
    assert len(files["aws-lambda-rie-x86_64"]) > 1_000_000


def test_a_changed_layer_file_or_base_image_makes_a_new_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = {"base:one": "sha256:1", "base:two": "sha256:2"}
    monkeypatch.setattr(image, "image_id", ids.__getitem__)
    module = tmp_path / "python" / "m.py"
    module.parent.mkdir()
    module.write_text("A = 1\n")
    first = image.layer_hash("base:one", tmp_path)
    assert image.layer_hash("base:one", tmp_path) == first
    assert image.layer_hash("base:two", tmp_path) != first
    module.write_text("A = 2\n")
    assert image.layer_hash("base:one", tmp_path) != first


def test_the_senders_container_goes_on_the_hosts_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sam_cli, "free_port", lambda: 45678)
    sam_kwargs = {
        "entrypoint": ["/var/rapid/aws-lambda-rie", "--log-level", "error"],
        "ports": {8080: ("127.0.0.1", 41234)},
        "extra_hosts": {"host.docker.internal": "host-gateway"},
        "environment": {"A": "1"},
    }
    created = sam_cli.on_host_network(dict(sam_kwargs))
    assert created["network_mode"] == "host"
    assert "ports" not in created
    assert "extra_hosts" not in created
    assert created["environment"] == {"A": "1"}
    entrypoint = created["entrypoint"]
    assert entrypoint[:3] == sam_kwargs["entrypoint"]
    emulator = entrypoint[entrypoint.index("--runtime-interface-emulator-address") + 1]
    assert emulator == "127.0.0.1:41234"  # where SAM sends its invocations
    api = entrypoint[entrypoint.index("--runtime-api-address") + 1]
    assert api == "127.0.0.1:45678"  # a free port, not the fixed 9001 two stacks would share


def test_the_sender_reaches_127_0_0_1_and_the_others_the_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "STATE", tmp_path)
    written = json.loads(run.write_env_vars(5123).read_text())
    sender = written["WebhookSenderFunction"]
    assert sender["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5123"
    assert sender["WEBHOOK_LOCAL_RECEIVER_HOST"] == "127.0.0.1"
    assert sender["WEBHOOK_DELIVERY_QUEUE_URL"].startswith("http://127.0.0.1:5123/")
    assert written["Parameters"]["AWS_ENDPOINT_URL"] == "http://host.docker.internal:5123"


def test_the_functions_and_the_pump_reach_the_emulator_where_they_are_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make soak`` puts its fault proxy on FUNCTIONS_EMULATOR_PORT; the consumers, which
    stand for the nodes, keep the emulator's own port."""
    monkeypatch.setattr(run, "STATE", tmp_path)
    monkeypatch.setenv("FUNCTIONS_EMULATOR_PORT", "5999")
    written = json.loads(run.write_env_vars(run.functions_port(5000)).read_text())
    assert written["Parameters"]["AWS_ENDPOINT_URL"] == "http://host.docker.internal:5999"
    assert written["WebhookSenderFunction"]["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5999"
    commands = run.node_side_commands(
        "http://127.0.0.1:5000", {"triggered": 1, "sender": 2}, tmp_path
    )
    assert commands["pump"][commands["pump"].index("--emulator") + 1] == "http://127.0.0.1:5999"
    consumers = commands["consumers"]
    assert consumers[consumers.index("--emulator") + 1] == "http://127.0.0.1:5000"
    monkeypatch.delenv("FUNCTIONS_EMULATOR_PORT")
    assert run.functions_port(5000) == 5000


def test_what_make_run_leaves_to_a_supervisor_is_written_sam_local_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RUN_START_LAMBDA=0 and RUN_NODE_SIDE=0 (``make soak``): nothing started, each command
    line written with what it needs and the port it answers on."""
    monkeypatch.setattr(run, "STATE", tmp_path)
    monkeypatch.setenv("RUN_NODE_SIDE", "0")
    started: list[Any] = []
    lambdas = {
        kind: run.Supervised(["sam", kind], {"TMPDIR": "/t"}, port)
        for kind, port in (("triggered", 3001), ("sender", 3002))
    }
    run.start_node_side(
        started, "http://127.0.0.1:5000", {"triggered": 3001, "sender": 3002}, tmp_path, lambdas
    )
    assert started == []
    written = json.loads((tmp_path / run.SUPERVISED_FILE).read_text())
    assert list(written) == ["triggered", "sender", "pump", "consumers"]
    assert written["sender"] == {
        "command": ["sam", "sender"],
        "env": {"TMPDIR": "/t"},
        "port": 3002,
    }
    assert written["pump"]["port"] is None
    assert "--lambda-endpoint" in written["pump"]["command"]


def test_only_the_sender_process_runs_on_the_hosts_network(tmp_path: Path) -> None:
    setup = run.SamSetup({k: tmp_path / k for k in local_templates.KINDS}, tmp_path, "img")
    for kind in local_templates.KINDS:
        command = run.sam_local("start-lambda", 3001, setup, kind)
        assert command[command.index("--template") + 1] == str(tmp_path / kind)
        assert ("--host-network" in command) == (kind == "sender")
        assert command[command.index("--warm-containers") + 1] == "EAGER"
        assert "WebhookAllowLocalReceiver=true" in command


def test_the_ready_line_takes_the_fleets_seconds_from_the_loader() -> None:
    log = "AWS emulator starting\nloaded demo.json: 4 nodes, 3055 items in 6.7 s (reservations)\n"
    assert run.load_seconds(log) == 6.7
    assert run.load_seconds("nothing loaded\n") == 0.0


def test_containers_started_at_once_never_get_the_same_host_port(monkeypatch):
    from devstack import run, sam_cli

    offered = iter([5001, 5001, 5002, 5001, 5003])  # SAM's finder, racing with itself
    monkeypatch.setattr(sam_cli, "_find_free_port", lambda *_, **__: next(offered))
    find = sam_cli.unique_ports(5000, 6300)
    assert [find("127.0.0.1", start=5000, end=9000) for _ in range(3)] == [5001, 5002, 5003]
    ranges = [range(*map(int, r.split("-"))) for r in run.CONTAINER_PORTS.values()]
    assert all(not set(a) & set(b) for a in ranges for b in ranges if a is not b)
