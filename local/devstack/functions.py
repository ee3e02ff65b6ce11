"""A function's handler module, loaded from functions/<name>/app.py as Lambda would load it.

Every function's file is called app.py, so each is loaded under its own module name
(``<name>_app``) instead of through sys.path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


def load_function(name: str) -> ModuleType:
    """functions/<name>/app.py as module ``<name>_app`` (a fresh module on every call)."""
    spec = importlib.util.spec_from_file_location(f"{name}_app", FUNCTIONS / name / "app.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no function {name!r} in {FUNCTIONS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
