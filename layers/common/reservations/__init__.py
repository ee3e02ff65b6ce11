"""GPU reservations service: the one package every function, tool and test imports.

- ``models``: the domain entities, the API's request/response shapes, the errors.
- ``rules``: pure domain rules (effective status, who may see what, reservability).
- ``auth``: API keys: parsing the header, hashing, the per-container cache.
- ``dal``: DynamoDB access: the single-table layout and the node partition.
- ``logic``: one module per use case, tying auth, rules and data access together.
- ``http``: the API Gateway resolver and the mapping of errors to responses.
- ``config``: the function's settings, validated before a handler runs.
- ``observability``: the one Logger, Metrics and Tracer.

The fleet file and its loader are an operator tool (``reservations_tools.fleet``), not here.
"""
