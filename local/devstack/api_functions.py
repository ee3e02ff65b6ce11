"""The API's functions in template.yaml, made from the endpoints' declarations: for each
endpoint (``reservations.endpoints.ALL``), its function (the shared ``functions/api/``
code with its ``ENDPOINT``), its settings, its least privileges (its declared grants, the
caller's key read, a keyed write's records), its route and its log group. They sit in one
region of the template, between two marker lines; the rest of the template is written by
hand.

    python -m devstack.api_functions            # rewrite the region (make template)
    python -m devstack.api_functions --check    # exit 1 when template.yaml differs
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from reservations import endpoints
from reservations.kernel.grants import TABLE, Grant
from reservations.kernel.http.routes import ApiRoute

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
BEGIN = (
    "  # ---- The API's functions, one an endpoint, made from the endpoints' declarations by\n"
    "  # `make template` (edit the declarations, not this region; a test fails on drift).\n"
    "  # dynamodb:LeadingKeys scopes each statement to partition-key prefixes, so a function\n"
    "  # can touch only the item kinds it needs (never an API key's, but to read). ----\n"
)
END = "  # ---- end of the API's functions ----\n"
# What a grant's ``on`` names, in the template.
RESOURCES = {
    TABLE: "!GetAtt ReservationsTable.Arn",
    "node-queues": (
        "!Sub arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${NodeQueuePrefix}*"
    ),
    "delivery-queue": "!GetAtt WebhookDeliveryQueue.Arn",
}
# Each setting a function may read, as the template sets it.
VARIABLES = {
    "CURSOR_SIGNING_KEY": '!Sub "{{resolve:secretsmanager:${CursorSigningSecret}:SecretString}}"',
    "NODE_QUEUE_PREFIX": "!Ref NodeQueuePrefix",
    "NODE_DEAD_LETTER_QUEUE_ARN": "!GetAtt SpotTerminationDeadLetterQueue.Arn",
    "WEBHOOK_ALLOW_LOCAL_RECEIVER": "!Ref WebhookAllowLocalReceiver",
    "WEBHOOK_DELIVERY_QUEUE_URL": "!Ref WebhookDeliveryQueue",
}


def logical_name(route: ApiRoute) -> str:
    """``list_units`` -> ``ListUnits`` (its function is ``ListUnitsFunction``)."""
    return "".join(part.capitalize() for part in route.function.split("_"))


def render(route: ApiRoute, slice_name: str) -> str:
    """The endpoint's function and its log group, as template.yaml holds them."""
    name = logical_name(route)
    variables = "".join(f"          {v}: {VARIABLES[v]}\n" for v in route.variables)
    statements = "".join(_statement(grant) for grant in route.policy)
    return (
        f"  {name}Function:\n"
        "    Type: AWS::Serverless::Function\n"
        "    Properties:\n"
        f"      Description: {route.method} {route.path}\n"
        "      CodeUri: functions/api/\n"
        "      Handler: app.lambda_handler\n"
        "      LoggingConfig:\n"
        f"        LogGroup: !Ref {name}LogGroup\n"
        "      Environment:\n"
        "        Variables:\n"
        f"          ENDPOINT: {slice_name}.{route.function}\n"
        f"{variables}"
        "      Policies:\n"
        "        - Statement:\n"
        f"{statements}"
        "      Events:\n"
        f"        {name}:\n"
        "          Type: HttpApi\n"
        "          Properties:\n"
        "            ApiId: !Ref HttpApi\n"
        f"            Method: {route.method}\n"
        f"            Path: {route.path}\n"
        "\n"
        f"  {name}LogGroup:\n"
        "    Type: AWS::Logs::LogGroup\n"
        "    Properties:\n"
        "      RetentionInDays: !Ref LogRetentionInDays\n"
    )


def _statement(grant: Grant) -> str:
    why = textwrap.wrap(grant.why, 88 - len("            # "))
    actions = grant.actions[0] if len(grant.actions) == 1 else f"[{', '.join(grant.actions)}]"
    if grant.on.startswith("index/"):
        resource = f"!Sub ${{ReservationsTable.Arn}}/{grant.on}"
    else:
        resource = RESOURCES[grant.on]
    text = "".join(f"            # {line}\n" for line in why)
    text += (
        f"            - Sid: {grant.sid}\n"
        "              Effect: Allow\n"
        f"              Action: {actions}\n"
        f"              Resource: {resource}\n"
    )
    if grant.keys:
        keys = ", ".join(f'"{key}"' for key in grant.keys)
        text += (
            "              Condition:\n"
            "                ForAllValues:StringLike:\n"
            f"                  dynamodb:LeadingKeys: [{keys}]\n"
        )
    return text


def region() -> str:
    """Every endpoint's function, in the table of contents' order, between the markers."""
    blocks = [
        render(route, endpoints.ENDPOINT_NAMES[route.function].partition(".")[0])
        for route in endpoints.ALL
    ]
    return BEGIN + "\n" + "\n".join(blocks) + "\n" + END


def synced(text: str) -> str:
    """``text`` (the template) with its region made anew from the declarations."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + region() + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when template.yaml differs")
    args = parser.parse_args(argv)
    text = TEMPLATE.read_text()
    made = synced(text)
    if args.check:
        if made != text:
            print("template.yaml differs from the endpoints' declarations: make template")
            return 1
        return 0
    TEMPLATE.write_text(made)
    print("wrote template.yaml's API functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
