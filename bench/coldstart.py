"""Cold init as deployed: each function's init in the Lambda image, against a bare handler.

`sam local`'s runtime emulator prints `Init Duration: 0.04 ms` whatever the function does
(it starts the runtime lazily and counts the init into `Duration`), so the clock is our own
(bench/container_init.py): process start to handler module imported, in the Lambda image,
with what `sam build` made mounted read-only where Lambda puts it (/opt, the task dir), and
Lambda's environment (so Powertools' Tracer is active, as deployed; under `sam local` it
turns itself off). Every run is a fresh interpreter; targets are interleaved so drift hits
them alike.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack import template

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".local/bench"
BUILD = WORK / "build"
IMAGE = "reservations/lambda-python3.11:local"
BARE = "bare handler"
# What the tables call them -> logical id: every function of template.yaml, in its order.
FUNCTIONS = {
    logical_id.removesuffix("Function"): logical_id
    for logical_id, resource in template.resources().items()
    if resource["Type"] == "AWS::Serverless::Function"
}


@dataclass
class Variant:
    title: str
    layer: Path
    env: dict[str, str] = field(default_factory=dict)


def sam_build() -> None:
    """`sam build` of template.yaml into our own build and cache dirs (not .aws-sam)."""
    tmp = WORK / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    command = [str(ROOT / ".venv/bin/sam"), "build", "--cached", "--parallel"]
    command += ["--build-dir", str(BUILD), "--cache-dir", str(WORK / "cache")]
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "TMPDIR": str(tmp)}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)  # noqa: S603
    if result.returncode != 0:
        raise SystemExit(f"sam build failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")


def lambda_env() -> dict[str, str]:
    """Globals' variables from template.yaml (references become placeholders), plus what
    the Lambda service sets."""
    document = template.document()
    variables = dict(document["Globals"]["Function"]["Environment"]["Variables"])
    for resource in document["Resources"].values():
        variables |= resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
    variables.pop("ENDPOINT", None)  # each API function's own: set per target (_script)
    env = {
        k: v if isinstance(v, str) else "60" if "Seconds" in k else "5"
        for k, v in variables.items()
    }
    return env | {
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(document["Globals"]["Function"]["MemorySize"]),
        "TABLE_NAME": "ReservationsTable",
    }


def variants() -> list[Variant]:
    layer = BUILD / "CommonLayer"
    plain = WORK / "layer-without-bytecode"  # what the python3.11 build method shipped
    shutil.rmtree(plain, ignore_errors=True)
    shutil.copytree(layer, plain, ignore=shutil.ignore_patterns("__pycache__"))
    return [
        Variant("as deployed (bytecode, Tracer active)", layer),
        Variant(
            "Tracer off (POWERTOOLS_TRACE_DISABLED)", layer, {"POWERTOOLS_TRACE_DISABLED": "true"}
        ),
        Variant("layer without bytecode, Tracer active", plain),
    ]


def _script(targets: list[str], runs: int) -> str:
    """One warm-up round (page cache), then ``runs`` interleaved rounds; an API function
    with its own ``ENDPOINT``, as its template block sets it."""
    rounds = "".join(
        f's=$(date +%s%N); printf "$i {t} "; ENDPOINT={_endpoint(t)} '
        f"/var/lang/bin/python3.11 /bench/init.py /fn/{t} $s || exit 1; "
        for t in targets
    )
    return f"for i in $(seq {runs + 1}); do {rounds}done"


def _endpoint(target: str) -> str:
    """The API function's ``ENDPOINT`` as its template block sets it ('' for any other)."""
    if target not in FUNCTIONS:
        return ""
    properties = template.resources()[FUNCTIONS[target]]["Properties"]
    return str(((properties.get("Environment") or {}).get("Variables") or {}).get("ENDPOINT", ""))


def measure(variant: Variant, runs: int) -> dict[str, list[dict[str, float]]]:
    """Per target (``BARE`` first): the samples of one container's runs."""
    mounts = {str(variant.layer): "/opt", str(ROOT / "bench/container_init.py"): "/bench/init.py"}
    mounts[str(ROOT / "bench/bare_handler.py")] = "/fn/bare/app.py"
    for name, logical_id in FUNCTIONS.items():
        mounts[str(BUILD / logical_id)] = f"/fn/{name}"
    command = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh"]
    for source, target in mounts.items():
        command += ["-v", f"{source}:{target}:ro"]
    for key, value in (lambda_env() | variant.env).items():
        command += ["-e", f"{key}={value}"]
    command += [IMAGE, "-c", _script(["bare", *FUNCTIONS], runs)]
    result = subprocess.run(command, capture_output=True, text=True)  # noqa: S603
    if result.returncode != 0:
        raise SystemExit(f"cold start in {IMAGE} failed:\n{result.stdout[-2000:]}{result.stderr}")
    samples: dict[str, list[dict[str, float]]] = {BARE: [], **{name: [] for name in FUNCTIONS}}
    for line in result.stdout.splitlines():
        round_, target, figures = line.split(" ", 2)
        if round_ != "1":  # the warm-up round
            samples[BARE if target == "bare" else target].append(json.loads(figures))
    return samples


def cold_start(runs: int = 7) -> list[dict[str, Any]]:
    """Median init and import per variant and target, and init as a ratio of the bare one."""
    sam_build()
    out = []
    for variant in variants():
        samples = measure(variant, runs)
        bare = statistics.median(s["init_ms"] for s in samples[BARE])
        rows = [
            {
                "target": target,
                "init_ms": statistics.median(s["init_ms"] for s in runs_),
                "import_ms": statistics.median(s["import_ms"] for s in runs_),
                "ratio": statistics.median(s["init_ms"] for s in runs_) / bare,
            }
            for target, runs_ in samples.items()
        ]
        out.append({"variant": variant.title, "runs": runs, "rows": rows})
    return out


def layer_megabytes() -> float:
    files = (p for p in (BUILD / "CommonLayer").rglob("*") if p.is_file())
    return sum(p.stat().st_size for p in files) / 1e6
