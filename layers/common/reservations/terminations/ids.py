"""The format of a termination's id."""

from __future__ import annotations

import re

# SQS takes at most 128 characters, of letters, digits and punctuation, as a FIFO
# de-duplication id. A termination id is one, and so are its redelivery ids
# (``<id>#r<n>``): keeping ids to 100 characters leaves room for any n.
MAX_TERMINATION_ID = 100
_TERMINATION_ID = re.compile(rf"[A-Za-z0-9!-/:-@\[-`{{-~]{{1,{MAX_TERMINATION_ID}}}")


def is_termination_id(value: str) -> bool:
    """A termination id that SQS accepts as a de-duplication id, with room for ``#r<n>``."""
    return _TERMINATION_ID.fullmatch(value) is not None
