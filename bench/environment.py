"""The environment the handlers read when their modules load, set on import: every bench
module imports this first, before anything of the functions' layer (whose Metrics, Logger
and settings read the environment once)."""

import os

ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "ReservationsTable",
    "CURSOR_SIGNING_KEY": "bench-only-cursor-signing-key-not-a-secret",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Bench",
    "POWERTOOLS_SERVICE_NAME": "reservations",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "AWS_ENDPOINT_URL": "",  # moto answers AWS's own endpoints; empty is unset for boto3
}
os.environ.update(ENV)
