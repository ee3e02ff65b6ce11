"""The one Logger, Metrics and Tracer every function and use case writes to.

Service name, metrics namespace, log level and tracing come from the POWERTOOLS_* variables
in template.yaml's Globals. Made at import, like Powertools' own examples: none of them
opens a connection.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths

logger = Logger()
metrics = Metrics()
tracer = Tracer()

# The correlation id of each kind of invocation: the API request's id, the schedule event's
# id, and for an SQS batch its first message's id (each message's own lines name what it
# is about).
API_REQUEST = correlation_paths.API_GATEWAY_HTTP
SCHEDULED_EVENT = correlation_paths.EVENT_BRIDGE
SQS_BATCH = "Records[0].messageId"
# A DynamoDB Stream batch: its first record's id (each relay's lines name its events).
STREAM_BATCH = "Records[0].eventID"

__all__ = [
    "API_REQUEST",
    "SCHEDULED_EVENT",
    "SQS_BATCH",
    "STREAM_BATCH",
    "logger",
    "metrics",
    "tracer",
]
