"""Every price the cost table uses, in one place: AWS list prices, us-east-1, on-demand, no
free tier, as published in November 2025 (DynamoDB's since its 1 November 2024 cut).

Capacity rules (AWS DynamoDB developer guide, "DynamoDB read and write operations" and
pricing page): a strongly consistent read is 1 read request unit per 4 KB, and a Query
sums the sizes of all the items it reads before rounding up to the next 4 KB; a write is 1
write request unit per 1 KB of the larger of the item before and after, rounded up per
item; in TransactWriteItems every item — condition checks included — costs 2 units per KB.
"""

REGION = "us-east-1"
AS_OF = "2025-11"

DYNAMODB_READ_REQUEST_UNIT = 0.125 / 1e6  # on-demand, Standard table class
DYNAMODB_WRITE_REQUEST_UNIT = 0.625 / 1e6
SQS_FIFO_REQUEST = 0.50 / 1e6  # each 64 KB chunk of a request's payload is one request
SQS_CHUNK_BYTES = 64 * 1024
LAMBDA_REQUEST = 0.20 / 1e6
LAMBDA_GB_SECOND = 0.0000166667  # x86_64; duration billed per 1 ms
HTTP_API_REQUEST = 1.00 / 1e6  # first 300 million a month, per 512 KB request

ROWS = [  # (what, price, unit) for the table of prices
    ("DynamoDB read request unit", DYNAMODB_READ_REQUEST_UNIT * 1e6, "per million"),
    ("DynamoDB write request unit", DYNAMODB_WRITE_REQUEST_UNIT * 1e6, "per million"),
    ("SQS FIFO request (64 KB chunk)", SQS_FIFO_REQUEST * 1e6, "per million"),
    ("Lambda request", LAMBDA_REQUEST * 1e6, "per million"),
    ("Lambda duration, x86_64", LAMBDA_GB_SECOND, "per GB-second"),
    ("HTTP API request", HTTP_API_REQUEST * 1e6, "per million"),
]
