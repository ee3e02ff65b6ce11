"""TransactWriteItems, in memory: the actions a slice's ``Writer`` makes (``Put``, ``Update``,
``Delete``, ``ConditionCheck``) applied to plain items, all or nothing, as DynamoDB does
with the part of its expression language the writers use (conditions: comparisons,
``attribute_exists`` / ``attribute_not_exists``, ``AND`` / ``OR`` / ``NOT``, parentheses;
updates: ``SET`` with ``+`` / ``-`` and ``if_not_exists``, ``REMOVE``, ``ADD``).

The fake node store (``tests.support.fakes``) commits a write through the very writer the
real table is handed: what the write's actions condition on and change is what the tests
see, not a second account of each write."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from reservations.kernel.aws.codec import from_attributes
from reservations.kernel.writes import WriteConflict

Item = dict[str, Any]
Key = tuple[str, str]

_TOKEN = re.compile(
    r"\s*(<>|<=|>=|[=<>(),+\-]|:[A-Za-z0-9_]+|#[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*)"
)
_UPDATE_CLAUSES = ("SET", "REMOVE", "ADD", "DELETE")


def plain(value: Any) -> Any:
    """A value as the codec reads it, its whole numbers as ``int``."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, set):
        return {plain(v) for v in value}
    return value


def stored(item: Mapping[str, Any]) -> Item:
    """An item as the table keeps it: no attribute whose value is None."""
    return {name: value for name, value in item.items() if value is not None}


def _tokens(expression: str) -> list[str]:
    tokens, at = [], 0
    expression = expression.strip()
    while at < len(expression):
        match = _TOKEN.match(expression, at)
        if match is None:
            raise ValueError(f"cannot read {expression[at:]!r} in {expression!r}")
        tokens.append(match.group(1))
        at = match.end()
        while at < len(expression) and expression[at].isspace():
            at += 1
    return tokens


class _Expression:
    """One expression's tokens, read against an item, its names and its values."""

    def __init__(self, text: str, names: Mapping[str, str], values: Mapping[str, Any]) -> None:
        self.tokens = _tokens(text)
        self.at = 0
        self.names = names
        self.values = values

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at]
        if expected is not None and token.upper() != expected:
            raise ValueError(f"expected {expected}, read {token}")
        self.at += 1
        return token

    def name(self) -> str:
        token = self.take()
        return self.names[token] if token.startswith("#") else token

    # --- conditions ----------------------------------------------------------------------

    def condition(self, item: Item) -> bool:
        result = self._and(item)
        while self._keyword("OR"):
            right = self._and(item)
            result = result or right
        return result

    def _keyword(self, word: str) -> bool:
        if (self.peek() or "").upper() == word:
            self.at += 1
            return True
        return False

    def _and(self, item: Item) -> bool:
        result = self._not(item)
        while self._keyword("AND"):
            right = self._not(item)
            result = result and right
        return result

    def _not(self, item: Item) -> bool:
        if self._keyword("NOT"):
            return not self._not(item)
        if self.peek() == "(":
            self.take("(")
            result = self.condition(item)
            self.take(")")
            return result
        word = self.peek() or ""
        if word in ("attribute_exists", "attribute_not_exists"):
            self.take()
            self.take("(")
            present = self.name() in item
            self.take(")")
            return present if word == "attribute_exists" else not present
        left = self._operand(item)
        op = self.take()
        right = self._operand(item)
        return _compare(left, op, right)

    def _operand(self, item: Item) -> Any:
        token = self.peek() or ""
        if token.startswith(":"):
            return self.values[self.take()]
        return item.get(self.name())

    # --- updates -------------------------------------------------------------------------

    def update(self, item: Item) -> Item:
        """The item as the update expression leaves it (read from ``item`` as it was)."""
        after = dict(item)
        while self.peek() is not None:
            clause = self.take().upper()
            while True:
                getattr(self, f"_{clause.lower()}")(item, after)
                if self.peek() != ",":
                    break
                self.take(",")
        return after

    def _set(self, item: Item, after: Item) -> None:
        name = self.name()
        self.take("=")
        value = self._value(item)
        if self.peek() in ("+", "-"):
            sign = self.take()
            other = self._value(item)
            value = value + other if sign == "+" else value - other
        after[name] = value

    def _value(self, item: Item) -> Any:
        token = self.peek() or ""
        if token == "if_not_exists":
            self.take()
            self.take("(")
            name = self.name()
            self.take(",")
            default = self._value(item)
            self.take(")")
            return item.get(name, default)
        if token.startswith(":"):
            return self.values[self.take()]
        name = self.name()
        if name not in item:
            raise ValueError(f"the update reads {name}, which the item does not have")
        return item[name]

    def _remove(self, _item: Item, after: Item) -> None:
        after.pop(self.name(), None)

    def _add(self, item: Item, after: Item) -> None:
        name = self.name()
        value = self.values[self.take()]
        current = after.get(name)
        if isinstance(value, set):
            after[name] = (current or set()) | value
        else:
            after[name] = (current or 0) + value

    def _delete(self, _item: Item, after: Item) -> None:
        name = self.name()
        left = (after.get(name) or set()) - self.values[self.take()]
        if left:
            after[name] = left
        else:
            after.pop(name, None)


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "=":
        return left is not None and left == right
    if op == "<>":
        return left != right
    numbers = isinstance(left, (int, Decimal)) and isinstance(right, (int, Decimal))
    if not numbers and (left is None or right is None or type(left) is not type(right)):
        return False
    comparisons: dict[str, Callable[[Any, Any], bool]] = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    return comparisons[op](left, right)


def _parts(action: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    ((kind, body),) = action.items()
    return kind, body


def key_of(action: Mapping[str, Any]) -> Key:
    """The key of the item an action is on."""
    kind, body = _parts(action)
    key = from_attributes(body["Item"] if kind == "Put" else body["Key"])
    return str(key["PK"]), str(key["SK"])


def _expression(body: Mapping[str, Any], field: str) -> _Expression | None:
    text = body.get(field)
    if text is None:
        return None
    values = plain(from_attributes(body.get("ExpressionAttributeValues", {})))
    return _Expression(text, body.get("ExpressionAttributeNames", {}), values)


def holds(action: Mapping[str, Any], item: Item | None) -> bool:
    """Whether the action's condition holds on the item as it is (None: absent)."""
    _kind, body = _parts(action)
    condition = _expression(body, "ConditionExpression")
    return condition is None or condition.condition(item or {})


def applied(action: Mapping[str, Any], item: Item | None) -> Item | None:
    """The item as the action leaves it (None: absent)."""
    kind, body = _parts(action)
    if kind == "Put":
        return stored(plain(from_attributes(body["Item"])))
    if kind == "Delete":
        return None
    if kind == "ConditionCheck":
        return item
    update = _expression(body, "UpdateExpression")
    assert update is not None
    start = item if item is not None else dict(zip(("PK", "SK"), key_of(action), strict=True))
    return stored(update.update(start))


def transact(
    actions: Iterable[Mapping[str, Any]], read: Callable[[Key], Item | None]
) -> dict[Key, Item | None]:
    """The items the actions leave, by key, where every action's condition held on the
    items as they were (``read``); else :class:`WriteConflict`, nothing written."""
    actions = list(actions)
    before = {key_of(action): read(key_of(action)) for action in actions}
    if not all(holds(action, before[key_of(action)]) for action in actions):
        raise WriteConflict("ConditionalCheckFailed")
    return {
        key_of(action): applied(action, before[key_of(action)])
        for action in actions
        if _parts(action)[0] != "ConditionCheck"
    }
