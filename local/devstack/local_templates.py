"""The templates ``make run`` gives its ``sam local`` processes, made from ``sam build``'s.

Each names no layer (the layer is in the image: ``image.py``) and holds the functions of one
process only, since ``--warm-containers EAGER`` starts a container for every function of
its template:

- ``api``: the functions behind an HttpApi route (``sam local start-api``);
- ``triggered``: the functions AWS would trigger (queues, streams, schedules) but the
  webhook sender (``sam local start-lambda``);
- ``sender``: the webhook sender alone, run on the host's network, so that a subscription
  to ``http://127.0.0.1:<port>`` reaches this machine's loopback.

Every function gets at least ``LOCAL_TIMEOUT_SECONDS``: a container's first call under
``sam local``, and the emulator on a busy small machine, are far slower than Lambda and
DynamoDB, and with the template's 10 s an API function's first call could give up with
the contract's 503 ("could not answer in time") before its first request to the table.
What the functions do within their time is the same as deployed.

They are written next to the built template, where the functions' relative code paths hold.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devstack import template

BUILT = Path(__file__).resolve().parents[2] / ".aws-sam" / "build" / "template.yaml"
SENDER = "WebhookSenderFunction"
FUNCTION = "AWS::Serverless::Function"
KINDS = ("api", "triggered", "sender")
# The least time a function has locally (seconds); the template's own when longer.
LOCAL_TIMEOUT_SECONDS = 30


def is_api(resource: dict[str, Any]) -> bool:
    events = resource.get("Properties", {}).get("Events") or {}
    return any(event.get("Type") == "HttpApi" for event in events.values())


CHOOSE: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "api": lambda _name, resource: is_api(resource),
    "triggered": lambda name, resource: not is_api(resource) and name != SENDER,
    "sender": lambda name, _resource: name == SENDER,
}


def without_layers(document: dict[str, Any]) -> dict[str, Any]:
    """The document with no layer: not in the globals, not on a function, not a resource."""
    local = copy.deepcopy(document)
    local.get("Globals", {}).get("Function", {}).pop("Layers", None)
    resources = local["Resources"]
    for name in [n for n, r in resources.items() if r["Type"] == "AWS::Serverless::LayerVersion"]:
        del resources[name]
    for resource in resources.values():
        if resource["Type"] == FUNCTION:
            resource.get("Properties", {}).pop("Layers", None)
    return local


def local_template(document: dict[str, Any], kind: str) -> dict[str, Any]:
    """The layer-free document with only the functions of ``kind``, each given at least
    ``LOCAL_TIMEOUT_SECONDS``."""
    local = without_layers(document)
    resources = local["Resources"]
    default = local.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    for name in [n for n, r in resources.items() if r["Type"] == FUNCTION]:
        if not CHOOSE[kind](name, resources[name]):
            del resources[name]
            continue
        properties = resources[name].setdefault("Properties", {})
        properties["Timeout"] = max(properties.get("Timeout", default), LOCAL_TIMEOUT_SECONDS)
    return local


def write_local_templates(built: Path = BUILT) -> dict[str, Path]:
    """kind -> the path of its template (JSON, which SAM reads as it reads YAML)."""
    document = template.document.__wrapped__(built)  # the build of now, not a cached one
    paths = {}
    for kind in KINDS:
        path = built.with_name(f"template-local-{kind}.json")
        # Whole or not at all: another stack of the same checkout may be reading it.
        written = path.with_name(f".{path.name}.{os.getpid()}")
        written.write_text(json.dumps(local_template(document, kind), indent=1))
        written.replace(path)
        paths[kind] = path
    return paths
