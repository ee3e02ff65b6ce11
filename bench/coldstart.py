"""Section 4: cold start — each handler module's import time in a fresh interpreter, against
a bare Powertools handler (bench/bare_handler.py) — and the built artifacts' sizes.

Two settings, each with the baseline imported the same way:

- ``bytecode``: the source tree (layers/common on PYTHONPATH, as /opt/python) with every
  module's bytecode already compiled (a private PYTHONPYCACHEPREFIX, warmed first);
- ``deployed``: what ``sam build`` produced (.aws-sam/build/<Function>/app.py and the
  CommonLayer's python/ dir) with no bytecode written, as in Lambda, where /opt and
  /var/task are read-only: whatever the artifact does not ship compiled, every cold start
  compiles again. The interpreter runs without site-packages (``-S``); after the layer
  comes a stand-in for the runtime's own SDK (the venv's compiled boto3, botocore and their
  dependencies), so nothing else the venv holds is importable.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam/build"
HANDLERS = {  # module -> its function's logical id in template.yaml
    "list_units": "ListUnitsFunction",
    "reclaim": "ReclaimFunction",
    "termination_reports": "TerminationReportsFunction",
    "sweeper": "SweeperFunction",
}
BASELINE = "bare Powertools handler (baseline)"
RATIO_GOAL = 1.5
SECOND = 1.0  # design.md: "the import of a handler module stays well under a second"
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024  # a function and its layers, unzipped
# What the python3.11 runtime provides besides the standard library (its SDK).
RUNTIME_SDK = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six.py", "urllib3")

# Run in a fresh interpreter: the import of one module file, timed from inside.
_IMPORT = """
import importlib.util, sys, time
start = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(time.perf_counter() - start)
"""


@dataclass
class Setting:
    key: str
    title: str
    layer: Path
    targets: dict[str, Path]  # label -> app.py, the baseline first
    env: dict[str, str]
    flags: tuple[str, ...] = ()


def _python(path: Path, setting: Setting, *flags: str) -> subprocess.CompletedProcess[str]:
    # ``-c`` puts the cwd, the handler's own directory, first on sys.path (as /var/task).
    return subprocess.run(  # noqa: S603 - our own interpreter and files
        [sys.executable, *setting.flags, *flags, "-c", _IMPORT, str(path)],
        capture_output=True,
        text=True,
        env=setting.env,
        cwd=path.parent,
        check=True,
    )


def import_seconds(path: Path, setting: Setting) -> float:
    return float(_python(path, setting).stdout.strip().splitlines()[-1])


def import_profile(path: Path, setting: Setting) -> dict[str, float]:
    """``-X importtime``: module -> its own import time in seconds."""
    own: dict[str, float] = {}
    for line in _python(path, setting, "-X", "importtime").stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|", 2)
        own[name.strip()] = int(self_us) / 1e6
    return own


def _group(module: str, depth: int = 1) -> str:
    parts = module.split(".")
    return ".".join(parts[: 3 if parts[0] == "aws_lambda_powertools" else depth])


def settings(env_extra: dict[str, str], workdir: Path) -> list[Setting]:
    """The two settings; the baseline is copied out so no stray __pycache__ helps it."""
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    base_env |= env_extra
    bare = workdir / "bare" / "app.py"
    bare.parent.mkdir()
    shutil.copy(ROOT / "bench/bare_handler.py", bare)
    source = Setting(
        "bytecode",
        "source tree, bytecode compiled",
        ROOT / "layers/common",
        {BASELINE: bare}
        | {f"functions/{m}/app.py": ROOT / "functions" / m / "app.py" for m in HANDLERS},
        {
            **{k: v for k, v in base_env.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPYCACHEPREFIX": str(workdir / "pycache"),
            "PYTHONPATH": str(ROOT / "layers/common"),
        },
    )
    result = [source]
    layer = BUILD / "CommonLayer" / "python"
    built = {f".aws-sam/build/{f}/app.py": BUILD / f / "app.py" for f in HANDLERS.values()}
    runtime = workdir / "runtime"  # stands in for the Lambda runtime's boto3
    runtime.mkdir()
    site = Path(boto3.__file__).resolve().parents[1]
    for name in RUNTIME_SDK:
        if (site / name).exists():
            (runtime / name).symlink_to(site / name)
    if layer.is_dir() and all(p.is_file() for p in built.values()):
        result.append(
            Setting(
                "deployed",
                "as built by sam build, no bytecode written (Lambda: read-only /opt)",
                layer,
                {BASELINE: bare} | built,
                {
                    **{k: v for k, v in base_env.items() if k != "PYTHONPYCACHEPREFIX"},
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONPATH": f"{layer}{os.pathsep}{runtime}",
                },
                ("-S",),
            )
        )
    return result


def measure(setting: Setting, runs: int) -> dict[str, Any]:
    for path in setting.targets.values():  # warm-up: page cache (and bytecode, if allowed)
        import_seconds(path, setting)
    samples: dict[str, list[float]] = {name: [] for name in setting.targets}
    for _ in range(runs):  # interleaved, so drift hits every module alike
        for name, path in setting.targets.items():
            samples[name].append(import_seconds(path, setting))
    base = statistics.median(samples[BASELINE])
    baseline_modules = import_profile(setting.targets[BASELINE], setting)
    rows = []
    for name, path in setting.targets.items():
        seconds = statistics.median(samples[name])
        ratio = seconds / base
        row: dict[str, Any] = {
            "module": name,
            "runs": runs,
            "median_ms": seconds * 1000,
            "min_ms": min(samples[name]) * 1000,
            "max_ms": max(samples[name]) * 1000,
            "ratio": ratio,
            "under_a_second": seconds < SECOND,
        }
        if name != BASELINE:
            row["verdict"] = "ok" if ratio <= RATIO_GOAL else "MISSES"
            if setting.key == "bytecode":
                # What it imports that the baseline does not (-X importtime, own times).
                extra: Counter[str] = Counter()
                for module, own in import_profile(path, setting).items():
                    if module not in baseline_modules:
                        extra[_group(module)] += own
                row["extra_imports_ms"] = {k: v * 1000 for k, v in extra.most_common(6)}
        rows.append(row)
    by_package: Counter[str] = Counter()
    for module, own in baseline_modules.items():
        by_package[_group(module)] += own
    return {
        "setting": setting.key,
        "title": setting.title,
        "pythonpath": str(setting.layer.relative_to(ROOT)),
        "flags": list(setting.flags),
        "bytecode_written": "PYTHONPYCACHEPREFIX" in setting.env,
        "rows": rows,
        "baseline_imports_by_package_ms": {k: v * 1000 for k, v in by_package.most_common(6)},
    }


RUNS = {"bytecode": 5, "deployed": 5}


def cold_start(env_extra: dict[str, str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-coldstart-") as workdir:
        return [measure(s, RUNS[s.key]) for s in settings(env_extra, Path(workdir))]


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for filename in filenames:
            file = Path(dirpath, filename)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def artifacts() -> dict[str, Any]:
    """``sam build --cached --parallel``, then the size of each built function and layer."""
    build = subprocess.run(  # noqa: S603 - the venv's own sam
        [str(ROOT / ".venv/bin/sam"), "build", "--cached", "--parallel"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        check=False,
    )
    dirs = sorted(p for p in BUILD.iterdir() if p.is_dir()) if BUILD.is_dir() else []
    sizes = {p.name: _size(p) for p in dirs}
    layer = sum(size for name, size in sizes.items() if name.endswith("Layer"))
    rows = []
    for name, size in sizes.items():
        deployed = size if name.endswith("Layer") else size + layer
        rows.append(
            {
                "artifact": name,
                "bytes": size,
                "mb": size / 1e6,
                "with_layer_bytes": deployed,
                "verdict": "ok" if deployed <= LAMBDA_UNZIPPED_LIMIT else "MISSES",
            }
        )
    layer_dir = BUILD / "CommonLayer" / "python"
    packages = (
        sorted(
            ((p.name, _size(p)) for p in layer_dir.iterdir() if p.is_dir()),
            key=lambda item: -item[1],
        )[:4]
        if layer_dir.is_dir()
        else []
    )
    output = (build.stderr or build.stdout).strip().splitlines()
    return {
        "sam_build_ok": build.returncode == 0,
        "sam_build_note": "" if build.returncode == 0 else (output[-1] if output else ""),
        "limit_bytes": LAMBDA_UNZIPPED_LIMIT,
        "rows": rows,
        "largest_in_layer_bytes": dict(packages),
        "layer_pyc_files": sum(1 for _ in layer_dir.rglob("*.pyc")) if layer_dir.is_dir() else 0,
    }
