"""Lambda entry point for the HTTP API's ``$default`` route: every path and method no other
function takes, answered with the contract's 404 instead of API Gateway's own."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.config import check_settings
from reservations.http.resolver import create_app
from reservations.observability import API_REQUEST, logger, metrics, tracer

# No routes on purpose: every request reaches the resolver's not-found handler, so the body
# and headers are byte for byte those of every other 404.
app = create_app(default_route=True)


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
