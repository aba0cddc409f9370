"""Names read as words (toolplan.plan_format.names): one reading for the validator's "did you
mean" and the offline model's tool choice."""

from __future__ import annotations

import pytest

from toolplan.plan_format.names import alike_name, name_words, starts_alike


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("numberOfDays", ["number", "of", "days"]),
        ("number_of_days", ["number", "of", "days"]),
        ("NumberOfDays", ["number", "of", "days"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("weather.get-forecast", ["weather", "get", "forecast"]),
        ("sha256Hash", ["sha256", "hash"]),
        ("Straße", ["strasse"]),
        ("город_отправления", ["город", "отправления"]),
        ("日付", ["日付"]),
        ("__", ["__"]),
    ],
)
def test_a_name_reads_as_the_same_words_however_it_is_cased(name: str, words: list[str]) -> None:
    assert name_words(name) == words


def test_a_word_starts_alike_only_when_the_shorter_is_long_enough() -> None:
    assert starts_alike("num", "number", shortest=3)
    assert starts_alike("number", "num", shortest=3)
    assert not starts_alike("num", "number", shortest=4)
    assert starts_alike("id", "id", shortest=4)  # equal words, however short
    assert not starts_alike("days", "adults", shortest=3)
    assert not starts_alike("", "days", shortest=0)


def test_a_name_alike_differs_in_spelling_only() -> None:
    keys = ["where_to", "phone_number", "number_of_adults", "user_name", "location"]
    assert alike_name("locaton", keys) == "location"
    assert alike_name("userName", keys) == "user_name"
    assert alike_name("num_adults", keys) == "number_of_adults"
    assert alike_name("hotel_name", keys) is None  # nearest as text: phone_number
    assert alike_name("number_of_days", keys) is None  # nearest as text: number_of_adults
    assert alike_name("id", ["ids", "_id"]) == "_id"  # the same words first, not the nearest text
    # "number" is a word of phone_number, but not its first: a number of another kind
    assert alike_name("number", keys) == "phone_number"
    assert alike_name("number", keys, leading=True) is None
    assert alike_name("Exchange", ["Exchange Rate"], leading=True) == "Exchange Rate"
    assert alike_name("adress", ["address", "phone_number"], leading=True) == "address"
