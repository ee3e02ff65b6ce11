"""What the document says a write with a body may answer, written out by hand (not from
the routes it checks): its success, 400, 401, 404, 409, 415, 422, throttling's 429, 500
and 503."""

BODY_WRITE_STATUSES = frozenset(
    {"200", "400", "401", "404", "409", "415", "422", "429", "500", "503"}
)
# ... and one that acts on one reservation's version: If-Match's 412.
VERSIONED_WRITE_STATUSES = BODY_WRITE_STATUSES | {"412"}
