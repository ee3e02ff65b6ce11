"""``make run``: the whole local stack, in the foreground until Ctrl-C.

1. validates the fleet file (``FLEET``, default: the demo fleet) before starting anything;
2. makes sure Docker runs and the Lambda image exists (local/ensure-docker.sh,
   local/build-lambda-image.sh);
3. starts the AWS emulator on ``AWS_EMULATOR_PORT`` (default 5000), provisioned from
   template.yaml, and loads the fleet into it; the functions and the pump are given
   ``FUNCTIONS_EMULATOR_PORT`` for it instead when set (``make soak`` puts its
   fault-injecting proxy there, in front of the emulator);
4. ``sam build`` (cached; ``RUN_SAM_BUILD=0``: the build in .aws-sam is used as it is, for
   a caller that built it once for several stacks) and the Lambda image with the layer in
   it, built once per layer (``image.py``), meanwhile; then, all at once,
   ``sam local start-api`` on ``API_PORT`` (default 3000) and two ``sam local start-lambda``
   on free ports, for the functions AWS would trigger and for the webhook sender (on the
   host's network), each from its own layer-free template (``local_templates.py``) and
   with every container started up front (``RUN_START_LAMBDA=0`` starts no start-lambda
   and writes their command lines to ``supervised.json``, as ``RUN_NODE_SIDE=0`` below);
5. starts one node-side consumer per node (``log`` driver) and the pump that feeds the
   termination reports to their function and runs the sweeper every few seconds
   (``RUN_CONSUMERS=0`` leaves the consumers out, so messages stay on the node queues;
   ``RUN_NODE_SIDE=0`` starts neither and writes their command lines to ``supervised.json``
   in the stack's directory, for ``make soak``, which kills and restarts them);
6. prints the URL and a ready ``curl`` line; Ctrl-C stops everything it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from devstack.containers import LOCAL_STACK_ENV, stack_containers
from devstack.emulator import LOCAL_CREDENTIALS, REGION
from devstack.image import layered_image
from devstack.local_templates import write_local_templates
from devstack.net import free_port, wait_for_port
from devstack.stopping import exit_now
from reservations_tools.fleet.loader import FleetError, read_fleet
from reservations_tools.fleet.model import Fleet

ROOT = Path(__file__).resolve().parents[2]
# Where the stack keeps its logs and state: .local/, or LOCAL_DIR (a test's stack its own).
STATE = Path(os.environ.get("LOCAL_DIR") or ROOT / ".local").resolve()
LAMBDA_IMAGE = "reservations/lambda-python3.11:local"
DEFAULT_FLEET = ROOT / "fleets" / "demo.json"
# sam local keeps image-build locks in the temp dir; give ours a dir we can clean.
SAM_TMP = STATE / "tmp"

BUILT_LAYER = ROOT / ".aws-sam" / "build" / "CommonLayer"


def say(message: str) -> None:
    print(f"make run: {message}", flush=True)


def sam_environment() -> dict[str, str]:
    """What every sam/boto3 child process gets: local credentials, no telemetry."""
    return {**os.environ, **sam_variables()}


def sam_variables() -> dict[str, str]:
    """What make run adds to its own environment for its children (``sam_environment``)."""
    return {
        **LOCAL_CREDENTIALS,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "SAM_CLI_TELEMETRY": "0",
        "TMPDIR": str(SAM_TMP),
        # sam local asks STS for the account id at start; the emulator answers at once.
        "AWS_ENDPOINT_URL_STS": f"http://127.0.0.1:{os.environ.get('AWS_EMULATOR_PORT', '5000')}",
    }


def sam_command() -> str:
    return str(Path(sys.executable).with_name("sam"))


def ensure_docker_and_image() -> None:
    env = sam_environment()
    if os.geteuid() == 0 and Path("/usr/bin/apt-get").exists():
        env.setdefault("AUTO_INSTALL", "1")  # a fresh Debian machine: install what is missing
    for script in ("ensure-docker.sh", "build-lambda-image.sh"):
        if subprocess.run(["bash", str(ROOT / "local" / script)], env=env, check=False).returncode:
            raise SystemExit(1)


def sam_build() -> None:
    if os.environ.get("RUN_SAM_BUILD", "1") == "0":
        say("sam build: skipped (RUN_SAM_BUILD=0), .aws-sam/build used as it is")
        return
    say("sam build (cached after the first run)...")
    result = subprocess.run(
        [sam_command(), "build", "--cached", "--parallel"],
        cwd=ROOT,
        env=sam_environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit("make run: sam build failed (output above)")


def functions_port(emulator_port: int) -> int:
    """Where the functions and the pump reach the emulator: ``FUNCTIONS_EMULATOR_PORT``
    (something in front of it, listening where it does: on 127.0.0.1 and Docker's bridge),
    or the emulator's own port."""
    return int(os.environ.get("FUNCTIONS_EMULATOR_PORT") or emulator_port)


def write_env_vars(emulator_port: int) -> Path:
    """events/env.json, with the emulator's port as the functions are given it
    (``functions_port``). The webhook sender runs on the host's network: it reaches the
    emulator, and a receiver on ``http://127.0.0.1:<port>``, at this machine's 127.0.0.1."""
    overrides = json.loads((ROOT / "events" / "env.json").read_text())
    queue = f"{emulator_port}/123456789012/WebhookDeliveryQueue"
    overrides["Parameters"]["AWS_ENDPOINT_URL"] = f"http://host.docker.internal:{emulator_port}"
    overrides["Parameters"]["WEBHOOK_DELIVERY_QUEUE_URL"] = f"http://host.docker.internal:{queue}"
    overrides["WebhookSenderFunction"] = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{emulator_port}",
        "WEBHOOK_DELIVERY_QUEUE_URL": f"http://127.0.0.1:{queue}",
        "WEBHOOK_LOCAL_RECEIVER_HOST": "127.0.0.1",
    }
    STATE.mkdir(exist_ok=True)
    path = STATE / "env.json"
    path.write_text(json.dumps(overrides, indent=2))
    return path


# Each sam local process's containers take host ports from a range of their own (SAM's
# 5000-9000 split three ways), so that containers started at once never pick the same one.
CONTAINER_PORTS = {"api": "5000-6300", "triggered": "6300-7600", "sender": "7600-9000"}


def sam_local(
    command: str, port: int, setup: SamSetup, kind: str, warm: str = "EAGER"
) -> list[str]:
    """``sam local <command>`` over the ``kind`` template, through ``devstack.sam_cli`` (a
    request id per request; the host's network for the webhook sender)."""
    network = (
        ["--host-network"]
        if kind == "sender"
        else ["--add-host", "host.docker.internal:host-gateway"]
    )
    return [
        sys.executable, "-m", "devstack.sam_cli", "local", command, *network,
        "--port-range", CONTAINER_PORTS[kind],
        "--template", str(setup.templates[kind]),
        "--host", "127.0.0.1", "--port", str(port),
        "--env-vars", str(setup.env_vars),
        "--invoke-image", setup.image, "--skip-pull-image",
        "--warm-containers", warm,
        # The local stack alone lets webhooks go to http://127.0.0.1:<port> (a receiver on
        # this machine, which the sender on the host's network reaches as 127.0.0.1).
        "--parameter-overrides", "WebhookAllowLocalReceiver=true",
    ]  # fmt: skip


def start(command: list[str], log: IO[str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=sam_environment(),
        stdout=log or subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # Ctrl-C reaches us; we stop the children in order
    )


def wait_for_log(process: subprocess.Popen[str], log: Path, marker: str) -> None:
    """Until ``marker`` is in ``log``, as long as ``process`` runs (loading a big fleet on a
    busy machine takes what it takes)."""
    while marker not in log.read_text():
        if process.poll() is not None:
            raise SystemExit(f"make run: the AWS emulator stopped:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)


def wait_for_api(url: str, process: subprocess.Popen[str]) -> None:
    """Until the API answers (any HTTP status: 401 is an answer), however long sam local
    takes on a busy machine, as long as it runs."""
    while process.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=30)  # noqa: S310 - our own loopback URL
            return
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"make run: sam local start-api exited; see {STATE / 'sam.log'}")


def demo_curl(fleet: Fleet, api_url: str) -> str:
    """A ready curl line (local-only keys): list the first node's units with a key that may
    read them; with no node yet, register one with a key that may."""
    usable = [k for k in fleet.api_keys if not k.revoked and k.expires_at is None]
    operators = [k for k in usable if k.org_id == fleet.platform_org_id]
    if not fleet.nodes:
        writers = [k for k in operators if "node.write" in k.permissions]
        key = writers[0].key if writers else "vl_your_key"
        owner = next((k.org_id for k in usable if k.org_id != fleet.platform_org_id), "org-acme")
        unit = (
            '{"id": "0000:04:00.0", "allocClass": "vfio-group", '
            '"gpuModelId": "nvidia-h100-sxm5-80gb", "sellableGpus": 1, "sellable": true}'
        )
        body = f'{{"ownerOrgId": "{owner}", "topologyGen": 1, "units": [{unit}]}}'
        return (
            f"curl -s -X PUT -H 'Authorization: Bearer {key}' {api_url}/v1/nodes/node-x1 "
            f"-d '{body}'"
        )
    readers = [k for k in usable if "reservation.read" in k.permissions]
    readers.sort(key=lambda k: k.org_id != fleet.platform_org_id)  # an operator's first
    key = readers[0].key if readers else "vl_your_key"
    units = f"{api_url}/v1/nodes/{fleet.nodes[0].id}/reservations/units"
    return f"curl -s -H 'Authorization: Bearer {key}' {units}"


def stop(processes: list[subprocess.Popen[str]]) -> None:
    """The emulator last: stopped with it, the node side's calls to it were retried with
    backoff for 14 s (boto's five attempts). The rest at once (the pump gives sam local's
    functions one attempt, so a call cut short ends it at once)."""
    last = [p for p in processes if module(p) == "devstack.emulator"]
    stop_together([p for p in processes if p not in last])
    stop_together(last, grace=5)


# A process of the stack slower than this to stop after SIGTERM is named with its time:
# the whole stack stops within 5 s of Ctrl-C on a 2-core machine, each process in about 1.
SLOW_STOP_SECONDS = 2.0


def stop_together(processes: list[subprocess.Popen[str]], grace: float = 15) -> None:
    """SIGTERM (which sam local and our own processes handle like Ctrl-C, and which works
    even when this process was started with SIGINT ignored), then SIGKILL after ``grace``
    seconds. Each process's own time to stop is measured (they are waited for together, so
    one slow process does not make the next look slow), and one slower than
    ``SLOW_STOP_SECONDS`` is named with it (the Ctrl-C test prints this)."""
    started = time.monotonic()
    running = [process for process in processes if process.poll() is None]
    for process in running:
        os.killpg(process.pid, signal.SIGTERM)
    while running:
        time.sleep(0.05)
        took = time.monotonic() - started
        for process in list(running):
            if process.poll() is not None:
                running.remove(process)
                if took > SLOW_STOP_SECONDS:
                    say(f"{component(process)} stopped {took:.1f} s after SIGTERM")
            elif took > grace:
                running.remove(process)
                say(f"{component(process)} still running {grace:.0f} s after SIGTERM: killed")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def module(process: subprocess.Popen[str]) -> str:
    """The ``-m`` module a process of the stack runs (``""`` for none)."""
    args = [str(arg) for arg in process.args] if isinstance(process.args, list) else []
    return args[args.index("-m") + 1] if "-m" in args[:-1] else ""


def component(process: subprocess.Popen[str]) -> str:
    """What a process of the stack is: ``devstack.pump``, ``devstack.sam_cli local start-api``."""
    name = module(process)
    if name != "devstack.sam_cli":
        return name or str(process.args)
    args = [str(arg) for arg in process.args]
    return " ".join(args[args.index("-m") + 1 :][:3])


def remove_leftovers(stack: str) -> None:
    """Each ``sam local`` removes the containers it made when it stops; those of one that
    was killed, or that died, are removed here: this stack's only (by its label), never
    another stack's of the same checkout. Also sam local's image-build lock, left when it
    was stopped mid-build."""
    for lock in SAM_TMP.glob("*.lock"):
        lock.unlink(missing_ok=True)
    leftovers = stack_containers(stack)
    if leftovers:
        say(f"removing {len(leftovers)} Lambda container(s) sam local left behind")
        subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)


def main() -> int:
    started = time.monotonic()
    api_port = int(os.environ.get("API_PORT", "3000"))
    emulator_port = int(os.environ.get("AWS_EMULATOR_PORT", "5000"))
    fleet_path = Path(os.environ.get("FLEET") or DEFAULT_FLEET).resolve()
    try:
        fleet = read_fleet(fleet_path)
    except FleetError as error:
        print(error, file=sys.stderr)
        return 1
    SAM_TMP.mkdir(parents=True, exist_ok=True)
    ensure_docker_and_image()
    # The label of the stack's containers (sam_cli): a new one, or the one a test gave.
    stack = os.environ.setdefault(LOCAL_STACK_ENV, uuid.uuid4().hex)
    processes: list[subprocess.Popen[str]] = []
    stop_on_signals()
    try:
        emulator_url, setup, phases = start_emulator(processes, emulator_port, fleet_path, started)
        api_url = start_functions(processes, api_port, emulator_url, fleet_path, setup)
        phases["functions"] = time.monotonic() - started - sum(phases.values())
        took = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases.items())
        total = time.monotonic() - started
        say(f"ready in {total:.0f} s. API: {api_url}  ({took}; logs: {shown(STATE)}/*.log)")
        print(f"\n  {demo_curl(fleet, api_url)}\n\nCtrl-C stops everything.", flush=True)
        while all(process.poll() is None for process in processes):
            time.sleep(1)
        say(f"a component exited; stopping the rest (see {shown(STATE)}/*.log)")
        return 1
    except KeyboardInterrupt:
        say("stopping...")
        return 0
    finally:
        for stopping in (signal.SIGINT, signal.SIGTERM):  # a second one must not cut cleanup
            signal.signal(stopping, signal.SIG_IGN)
        stopping_at = time.monotonic()
        stop(processes)
        remove_leftovers(stack)
        say(f"stopped in {time.monotonic() - stopping_at:.1f} s")


def stop_on_signals() -> None:
    """Ctrl-C and SIGTERM stop the stack (explicitly: a background job of a script starts
    with SIGINT ignored)."""

    def _interrupt(_signum: int, _frame: FrameType | None) -> Any:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


@dataclass
class SamSetup:
    """What the ``sam local`` processes are given: their templates, variables and image."""

    templates: dict[str, Path]
    env_vars: Path
    image: str


def prepare_functions(emulator_port: int) -> SamSetup:
    """``sam build`` (cached), the layer-free templates, and the image with the layer."""
    sam_build()
    templates = write_local_templates()
    return SamSetup(
        templates,
        write_env_vars(functions_port(emulator_port)),
        layered_image(LAMBDA_IMAGE, BUILT_LAYER),
    )


def start_emulator(
    processes: list[subprocess.Popen[str]], port: int, fleet_path: Path, started: float
) -> tuple[str, SamSetup, dict[str, float]]:
    """The AWS emulator with the fleet loaded, while the functions are prepared; its URL,
    the functions' setup, and the seconds the emulator and the fleet took."""
    STATE.mkdir(exist_ok=True)
    log = STATE / "emulator.log"
    command = [sys.executable, "-m", "devstack.emulator", "--port", str(port)]
    emulator = start([*command, "--fleet", str(fleet_path)], log=log.open("w"))
    processes.append(emulator)
    with ThreadPoolExecutor(1) as background:
        preparing = background.submit(prepare_functions, port)
        wait_for_log(emulator, log, "AWS emulator ready")
        ready = time.monotonic() - started
        say(f"AWS emulator on http://127.0.0.1:{port}, fleet {fleet_path.name} loaded")
        if functions_port(port) != port:
            say(f"the functions and the pump reach it at port {functions_port(port)}")
        say(load_line(log.read_text()))
        setup = preparing.result()
    fleet = load_seconds(log.read_text())
    return f"http://127.0.0.1:{port}", setup, {"emulator": ready - fleet, "fleet": fleet}


def load_line(emulator_log: str) -> str:
    """The fleet loader's line from the emulator's log: what it loaded, in how long."""
    lines = [line for line in emulator_log.splitlines() if line.startswith("loaded ")]
    return lines[-1] if lines else "the fleet loader said nothing"


def load_seconds(emulator_log: str) -> float:
    """The fleet loader's time, from its line (0 when it said none)."""
    found = re.search(r" in (\d+(?:\.\d+)?) s\b", load_line(emulator_log))
    return float(found.group(1)) if found else 0.0


def start_functions(
    processes: list[subprocess.Popen[str]], api_port: int, emulator_url: str,
    fleet_path: Path, setup: SamSetup,
) -> str:  # fmt: skip
    """The three ``sam local`` processes at once (the image is built: nothing for them to
    build), every container started up front (``API_WARM_CONTAINERS=LAZY`` starts the API's
    on their first request instead); then the pump and the consumers. Returns the API's URL
    once every process answers: as long as they run, however long a busy machine takes.
    ``RUN_START_LAMBDA=0``: the two start-lambda's command lines are left to a supervisor
    (``supervised.json``), as ``RUN_NODE_SIDE=0`` leaves the pump's and the consumers'."""
    warm = os.environ.get("API_WARM_CONTAINERS", "EAGER")
    ports = {"triggered": free_port(), "sender": free_port()}
    logs = {"api": "sam.log", "triggered": "sam-lambda.log", "sender": "sam-sender.log"}
    lambdas = {kind: sam_local("start-lambda", port, setup, kind) for kind, port in ports.items()}
    left: dict[str, Supervised] = {}
    if os.environ.get("RUN_START_LAMBDA", "1") == "0":
        variables = {**sam_variables(), LOCAL_STACK_ENV: os.environ[LOCAL_STACK_ENV]}
        left = {kind: Supervised(lambdas.pop(kind), variables, port)
                for kind, port in ports.items()}  # fmt: skip
    sam = {
        "api": start(sam_local("start-api", api_port, setup, "api", warm), open_log(logs["api"])),
        **{kind: start(command, open_log(logs[kind])) for kind, command in lambdas.items()},
    }
    processes.extend(sam.values())
    start_node_side(processes, emulator_url, ports, fleet_path, left)
    api_url = f"http://127.0.0.1:{api_port}"
    wait_for_api(f"{api_url}/v1/nodes/-/reservations/units", sam["api"])
    for kind, port in ports.items():
        if kind in left:
            continue
        if not wait_for_port(
            port, timeout=float("inf"), alive=lambda k=kind: sam[k].poll() is None
        ):
            raise SystemExit(f"make run: sam local start-lambda ({kind}) exited; see {STATE}")
    return api_url


def shown(path: Path) -> str:
    """A path as the ready line shows it: relative to the checkout when in it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def open_log(name: str) -> IO[str]:
    return (STATE / name).open("w")


# The command lines make run leaves to a supervisor of its own to run (``make soak`` kills
# and restarts them), instead of starting them: the pump's and the consumers' with
# RUN_NODE_SIDE=0, the two ``sam local start-lambda``'s with RUN_START_LAMBDA=0.
SUPERVISED_FILE = "supervised.json"


@dataclass(frozen=True)
class Supervised:
    """A process make run leaves to a supervisor: its command line, the variables it needs
    besides local credentials and region (``soak.stack.environment``), and the port it
    answers on once ready (None: it answers nothing)."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "env": self.env, "port": self.port}


def node_side_commands(
    emulator_url: str, ports: dict[str, int], fleet_path: Path
) -> dict[str, list[str]]:
    """The pump's command line, and the consumers' (unless ``RUN_CONSUMERS=0``). The pump
    reaches the emulator where the functions do (``functions_port``); the consumers, which
    stand for the nodes, at its own port."""
    front = functions_port(int(emulator_url.rsplit(":", 1)[1]))
    pump = [
        "--emulator", f"http://127.0.0.1:{front}",
        "--lambda-endpoint", f"http://127.0.0.1:{ports['triggered']}",
        "--sender-endpoint", f"http://127.0.0.1:{ports['sender']}",
    ]  # fmt: skip
    commands = {"pump": [sys.executable, "-m", "devstack.pump", *pump]}
    if os.environ.get("RUN_CONSUMERS", "1") != "0":
        consumers = ["--emulator", emulator_url, "--fleet", str(fleet_path)]
        commands["consumers"] = [sys.executable, "-m", "devstack.consumers", *consumers]
    return commands


def start_node_side(
    processes: list[subprocess.Popen[str]], emulator_url: str, ports: dict[str, int],
    fleet_path: Path, left: dict[str, Supervised],
) -> None:  # fmt: skip
    """The pump that plays the triggers (it waits for the functions' ports itself), and one
    consumer per node; with ``RUN_NODE_SIDE=0``, only their command lines. What is ``left``
    to a supervisor (the start-lambda's, the node side's) is written to
    ``SUPERVISED_FILE`` in the stack's directory, the sam local first (the pump waits for
    them)."""
    commands = node_side_commands(emulator_url, ports, fleet_path)
    if os.environ.get("RUN_NODE_SIDE", "1") == "0":
        left = {**left, **{name: Supervised(command) for name, command in commands.items()}}
    else:
        loop_log = open_log("loop.log")
        for command in commands.values():
            processes.append(start(command, log=loop_log))
    if left:
        supervised = {name: one.to_json() for name, one in left.items()}
        (STATE / SUPERVISED_FILE).write_text(json.dumps(supervised, indent=2))


if __name__ == "__main__":
    exit_now(main())
