"""Every API function's entry point: the endpoint its ``ENDPOINT`` variable names
(``<slice>.<function>``, set by its block in template.yaml), built from that endpoint's
declaration in its slice (``reservations/<slice>/endpoints.py``). Only that slice is
imported."""

from reservations.kernel.http.functions import function_of

function = function_of()
app, lambda_handler = function.app, function.lambda_handler
