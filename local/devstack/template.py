"""Read template.yaml's resources, so the emulator and the tests build exactly what deploys.

Locally a resource's physical name is its logical id (``ReservationsTable``); a FIFO queue
gets the ``.fifo`` suffix SQS requires.
"""

from __future__ import annotations

import contextlib
from functools import cache
from pathlib import Path
from typing import Any

import yaml

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form tags (``!Ref X`` becomes ``{"Ref": "X"}``)."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


@cache
def document(path: Path = TEMPLATE) -> dict[str, Any]:
    """The whole template, CloudFormation tags as their long-form dicts."""
    loaded: dict[str, Any] = yaml.load(path.read_text(), Loader=_CfnLoader)  # noqa: S506
    return loaded


def resources(path: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    return dict(document(path)["Resources"])


def of_type(resource_type: str, path: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    """Logical id -> properties of every resource of one type."""
    return {
        logical_id: resource.get("Properties", {})
        for logical_id, resource in resources(path).items()
        if resource["Type"] == resource_type
    }


def queue_name(logical_id: str, properties: dict[str, Any]) -> str:
    return logical_id + (".fifo" if properties.get("FifoQueue") else "")


def create_tables(client: Any, path: Path = TEMPLATE) -> list[str]:
    """Create every AWS::DynamoDB::Table of the template (skipping existing ones)."""
    made = []
    for logical_id, props in of_type("AWS::DynamoDB::Table", path).items():
        request: dict[str, Any] = {
            "TableName": logical_id,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if "GlobalSecondaryIndexes" in props:
            request["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if "StreamSpecification" in props:
            request["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
        try:
            client.create_table(**request)
        except client.exceptions.ResourceInUseException:
            continue  # already provisioned
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            client.update_time_to_live(
                TableName=logical_id,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        made.append(logical_id)
    return made


def create_queues(client: Any, path: Path = TEMPLATE) -> dict[str, str]:
    """Create every AWS::SQS::Queue of the template; logical id -> queue URL.

    Dead-letter queues are made first, so a redrive policy can name its target's ARN.
    """
    queues = of_type("AWS::SQS::Queue", path)
    urls: dict[str, str] = {}
    arns: dict[str, str] = {}
    order = sorted(queues, key=lambda logical_id: "RedrivePolicy" in queues[logical_id])
    for logical_id in order:
        props = queues[logical_id]
        attributes = {
            name: str(props[name]).lower() if isinstance(props[name], bool) else str(props[name])
            for name in (
                "FifoQueue",
                "ContentBasedDeduplication",
                "VisibilityTimeout",
                "MessageRetentionPeriod",
                "ReceiveMessageWaitTimeSeconds",
            )
            if name in props
        }
        redrive = props.get("RedrivePolicy")
        if redrive:
            target = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
            attributes["RedrivePolicy"] = (
                f'{{"deadLetterTargetArn":"{arns[target]}",'
                f'"maxReceiveCount":"{redrive["maxReceiveCount"]}"}}'
            )
        url = client.create_queue(QueueName=queue_name(logical_id, props), Attributes=attributes)[
            "QueueUrl"
        ]
        urls[logical_id] = url
        arns[logical_id] = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
    return urls


def create_event_buses(client: Any, path: Path = TEMPLATE) -> list[str]:
    """Create every AWS::Events::EventBus of the template (named by its logical id, as the
    local stack names every resource); their names."""
    names = []
    for logical_id in of_type("AWS::Events::EventBus", path):
        with contextlib.suppress(client.exceptions.ResourceAlreadyExistsException):
            client.create_event_bus(Name=logical_id)
        names.append(logical_id)
    return names


def stream_mappings(path: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    """Logical id -> properties of every event source mapping that reads a table's stream."""
    return {
        logical_id: props
        for logical_id, props in of_type("AWS::Lambda::EventSourceMapping", path).items()
        if props.get("EventSourceArn", {}).get("Fn::GetAtt", [None, None])[1] == "StreamArn"
    }


def api_endpoints(path: Path = TEMPLATE) -> dict[str, str]:
    """Each API function's name -> the endpoint it serves (its ``ENDPOINT`` variable,
    ``<slice>.<function>``): the functions whose code is the shared ``functions/api/``."""
    found = {}
    for properties in of_type("AWS::Serverless::Function", path).values():
        variables = _variables(properties)
        if "ENDPOINT" in variables:
            found[variables["ENDPOINT"].rpartition(".")[2]] = variables["ENDPOINT"]
    return found


def function_id(name: str, path: Path = TEMPLATE) -> str:
    """The logical id of the function ``name``: an API function's (whose ``ENDPOINT`` ends
    in ``.<name>``), or the one whose code is ``functions/<name>/``."""
    endpoint = api_endpoints(path).get(name)
    found = [
        logical_id
        for logical_id, properties in of_type("AWS::Serverless::Function", path).items()
        if properties["CodeUri"] == f"functions/{name}/"
        or (endpoint is not None and _variables(properties).get("ENDPOINT") == endpoint)
    ]
    if len(found) != 1:
        raise LookupError(f"no one function {name!r} in the template")
    return found[0]


def _variables(properties: dict[str, Any]) -> dict[str, Any]:
    return dict((properties.get("Environment") or {}).get("Variables") or {})
