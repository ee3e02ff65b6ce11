"""Whether an OpenAPI query parameter allows a query string's value: the value typed as the
parameter's schema reads it (an integer in its JSON spelling; a list, form style and not
exploded, split at its commas), then checked with JSON Schema 2020-12 (OpenAPI 3.1's)."""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft202012Validator


def decoded(parameter: dict[str, Any], text: str, lenient: bool = False) -> Any:
    """The value as the schema types it (anything not an integer stays a string, which an
    integer's schema refuses). ``lenient``: a list's items with the spaces around them
    dropped, as the API reads them."""
    schema = parameter["schema"]
    if schema.get("type") == "integer":
        return int(text) if re.fullmatch(r"-?(0|[1-9][0-9]*)", text) else text
    if schema.get("type") == "array":
        assert (parameter["style"], parameter["explode"]) == ("form", False)
        return [item.strip(" ") if lenient else item for item in text.split(",")]
    return text


def allows(
    parameter: dict[str, Any], text: str, lenient: bool = False, components: Any = None
) -> bool:
    """Whether the parameter allows ``text`` (given empty: whether it may be)."""
    if text == "":
        return bool(parameter.get("allowEmptyValue"))
    schema = {**parameter["schema"], "components": components or {}}
    return bool(
        Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(
            decoded(parameter, text, lenient)
        )
    )
