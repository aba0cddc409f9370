"""Request and plan IDs: the pattern matches the whole string, so nothing rides along after it."""

from __future__ import annotations

import pytest

from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import is_valid_id, new_id, require_id


def test_a_minted_id_is_valid() -> None:
    assert is_valid_id(new_id("plan"), "plan")
    assert is_valid_id(new_id("req"), "req")


@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\x00"])
def test_an_id_with_a_trailing_character_is_refused(tail: str) -> None:
    # `$` also matches before a final newline; an ID that passes with "\n" reaches the store
    # query and the logs with a character nobody typed.
    value = "plan_1732200000_k3j9x0ab2c" + tail
    assert not is_valid_id(value)
    with pytest.raises(InvalidInput, match="is not a plan ID"):
        require_id(value, "plan")
