#!/usr/bin/env bash
# `make mutate`: mutmut over every module of the layer, each module's mutants against the
# tests that exercise it (local/mutate_conftest.py), in a staging copy (.mutmut/) so the
# working tree is never touched. Prints the kill ratio and every mutant not killed; fails
# below MUTATE_MIN percent (default 90). What is in scope, and why: docs/mutation.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STAGE=$ROOT/.mutmut
# A ratchet at the ratio reached (docs/mutation.md): raise it as tests are added.
MIN=${MUTATE_MIN:-90}
JOBS=${MUTATE_JOBS:-$(nproc)}

# A fresh copy of the last commit every run: mutmut keeps results per function, and a stale
# copy would keep verdicts on code that has changed since; the commit, not the working
# tree, so a run is reproducible and never picks up a half-written file (commit first).
rm -rf "$STAGE"
mkdir -p "$STAGE/src"
git archive "${MUTATE_REF:-HEAD}" layers/common functions local/devstack local/mutate_conftest.py local/mypy_mutants.ini local/mutmut_run.py tools agent tests fleets events docs/openapi.json \
  template.yaml pyproject.toml | tar -x -C "$STAGE"
# The packages the tests import besides the layer's come from the same commit, ahead of the
# working tree's editable install.
export PYTHONPATH="$STAGE/local:$STAGE/tools:$STAGE/agent"
cp -r "$STAGE/layers/common/reservations" "$STAGE/src/reservations"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
# mutmut runs the tests inside mutants/ (the copy it mutates): what the tests read by path
# from the repository root (fleets, events, the template, the layer's files) is linked there.
mkdir -p "$STAGE/mutants"
for path in layers functions fleets events docs template.yaml; do ln -s "$STAGE/$path" "$STAGE/mutants/$path"; done
# The staging copy's root conftest narrows each mutant's tests to those its module is judged
# by, and gives mutmut 3.7 the pytest item attribute pytest 9 dropped (local/mutate_conftest.py).
cp "$STAGE/local/mutate_conftest.py" "$STAGE/mutants/conftest.py"

cd "$STAGE"
# mutmut's type check runs `mypy` (local/mypy_mutants.ini); every mutant's pytest session
# loads only the plugins the tests use (by entry point none; pytest-socket by name, in
# pyproject.toml: a tenth of a second per mutant saved, over thousands of mutants).
export PATH="$ROOT/.venv/bin:$PATH" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
started=$(date +%s)
"$ROOT/.venv/bin/python" local/mutmut_run.py run --max-children "$JOBS" > run.log 2>&1 || {
  tail -40 run.log >&2
  echo "mutmut failed; the whole log is in .mutmut/run.log" >&2
  exit 1
}
elapsed=$(($(date +%s) - started))
"$ROOT/.venv/bin/mutmut" results --all true > verdicts.txt
echo "mutmut: ${elapsed}s with ${JOBS} workers; full log in .mutmut/run.log"
"$ROOT/.venv/bin/python" - "$MIN" <<'EOF'
import collections
import sys
from pathlib import Path

# "    reservations.nodes.rules.units.x_f__mutmut_3: killed", one line per mutant.
verdicts = dict(
    line.strip().rsplit(": ", 1) for line in Path("verdicts.txt").read_text().splitlines()
)
counts = collections.Counter(verdicts.values())
total = len(verdicts)
# mypy --strict refuses it: `make lint` would fail on it as surely as a test.
typed = counts["caught by type check"]
killed = counts["killed"] + typed
ratio = 100 * killed / total if total else 0.0
tested = total - typed
print(f"killed {killed} of {total} mutants: {ratio:.1f}% (goal {sys.argv[1]}%)")
print(f"  by the type check: {typed}; by a test: {counts['killed']} of the {tested} that "
      f"mypy let through ({100 * counts['killed'] / tested if tested else 0:.1f}%)")
print("  " + ", ".join(f"{name} {n}" for name, n in sorted(counts.items())))
print("not killed (`cd .mutmut && ../.venv/bin/mutmut show NAME` shows the change):")
left = [f"    {name}: {verdict}" for name, verdict in verdicts.items()
        if verdict not in ("killed", "caught by type check")]
Path("survivors.txt").write_text("\n".join(left) + "\n")
print("\n".join(left) or "    none")
sys.exit(0 if ratio >= float(sys.argv[1]) else 1)
EOF
