"""The cold-start baseline: a bare Powertools HTTP handler importing what the functions do.

Same libraries as functions/*/app.py (Powertools' Logger, Metrics, Tracer and HTTP API
resolver, pydantic, boto3), one trivial route, none of the reservations package.
"""

from typing import Any

import boto3  # noqa: F401 - imported for its import time, as the functions' layer does
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

logger = Logger()
metrics = Metrics()
tracer = Tracer()
app = APIGatewayHttpResolver(enable_validation=True)


class Pong(BaseModel):
    ok: bool


@app.get("/ping")
def ping() -> Pong:
    return Pong(ok=True)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
