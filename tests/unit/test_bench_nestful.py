"""The NESTFUL bench's pure parts: the data copy and tool lists, specs as tools, gold sequences
as plans, the reply readers, the direct prompt, and the metrics, checked against numbers that
NESTFUL's own scorer printed for a fixture of answers (``fixtures/nestful_scorer.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.nestful.data import (
    TOOLS_PER_SAMPLE,
    NestfulMissing,
    declared_defaults,
    load_split,
    sample,
)
from bench.nestful.metrics import aggregate, score_sample
from bench.nestful.official import nestful_scores
from bench.nestful.plans import gold_issues, gold_plan, plan_calls
from bench.nestful.prompting import SYSTEM, examples_text, messages
from bench.nestful.replies import read_lenient, read_strict
from bench.nestful.sequence import (
    Call,
    canonical_value,
    read_calls,
    references_in,
    relabel,
    without_defaults,
)
from bench.nestful.tools import Toolbox, input_schema, output_schema

from tests.support.nestful_copy import BUS, EXECUTABLE_SPECS, SGD_SPECS, write_copy

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "nestful_scorer.json").read_text())


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return write_copy(tmp_path / "nestful")


# -- data --------------------------------------------------------------------------------------


def test_each_sample_gets_its_gold_functions_and_seeded_distractors(copy: Path) -> None:
    first = load_split("sgd", seed=0, root=copy)
    again = load_split("sgd", seed=0, root=copy)
    other = load_split("sgd", seed=1, root=copy)
    assert [s.id for s in first] == ["sgd-0", "sgd-1"]
    bus = first[0]
    names = [t["name"] for t in bus.tools]
    assert len(names) == TOOLS_PER_SAMPLE == len(set(names))
    assert {"Buses.FindBus", "Buses.BuyBusTicket"} <= set(names)
    assert names == [t["name"] for t in again[0].tools]  # every contestant, every run
    assert names != [t["name"] for t in other[0].tools]
    assert bus.gold_names == ["Buses.FindBus", "Buses.BuyBusTicket"]
    executable = load_split("executable", root=copy)[0]  # fewer specs than 8: all of them
    assert len(executable.tools) == len(EXECUTABLE_SPECS)
    assert sample(first, 1, seed=0) == sample(first, 1, seed=0) and len(sample(first, 1, 0)) == 1


def test_a_missing_copy_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(NestfulMissing, match=r"python -m bench.nestful --fetch"):
        load_split("sgd", root=tmp_path)
    with pytest.raises(ValueError, match="unknown NESTFUL split"):
        load_split("train", root=tmp_path)


# -- specs as tools ----------------------------------------------------------------------------


def test_untyped_specs_take_strings_and_declare_their_outputs() -> None:
    find_bus = SGD_SPECS[0]
    schema = input_schema(find_bus)
    assert schema["required"] == ["origin", "destination", "departure_date"]
    assert schema["properties"]["origin"] == {"description": "origin", "type": "string"}
    assert schema["properties"]["fare_type"] == {
        "description": "Type of fare",
        "type": "string",
        "enum": ["Economy", "Flexible"],
        "default": "Economy",
    }
    returns = output_schema(find_bus)
    assert returns is not None and "type" not in returns["properties"]["price"]


def test_typed_specs_map_their_own_types() -> None:
    search = EXECUTABLE_SPECS[0]
    properties = input_schema(search)["properties"]
    assert properties["max_price"]["type"] == "number"
    assert properties["min_rating"]["enum"] == ["1", "2"]
    assert properties["day"] == {"description": "Day (type: Date (yyyy-mm-dd))", "type": "string"}
    assert input_schema(search)["required"] == ["q"]
    assert output_schema(search) == {
        "type": "object",
        "properties": {
            "products": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        },
    }


def test_names_are_offered_api_safe_and_mapped_back() -> None:
    box = Toolbox.of([SGD_SPECS[0], *EXECUTABLE_SPECS])
    assert box.api_names == (
        "Buses_FindBus",
        "Real-Time_Product_Search",
        "WeatherAPI_com_Forecast",
    )
    assert box.nestful_name("Buses_FindBus") == "Buses.FindBus"
    assert box.nestful_name("Buses.FindBus") == "Buses.FindBus"
    assert box.nestful_name("made_up") == "made_up"
    catalog = box.catalog()
    assert catalog.names == list(box.api_names)
    assert catalog.info("Buses_FindBus").returns is not None  # toolplan sees the outputs
    prompt = box.prompt_tools()
    assert [t["name"] for t in prompt] == list(box.api_names)
    assert "host" not in prompt[1] and prompt[1]["output_parameters"]
    assert [t["function"]["name"] for t in box.openai_tools()] == list(box.api_names)


# -- sequences and plans -----------------------------------------------------------------------


def test_references_and_values_compare_by_meaning() -> None:
    labels = ["var1", "var_2"]
    found = [(r.label, r.path) for r in references_in("$var1.a[0].b$ and $var_2$", labels)]
    assert found == [("var1", ".a[0].b"), ("var_2", "")]
    assert [r.path for r in references_in("5 * $var1.Exchange Rate$", labels)] == [".Exchange Rate"]
    assert list(references_in("$100-$200, $varX.y$", labels)) == []
    assert canonical_value(3) == canonical_value("3") == canonical_value(3.0)
    assert canonical_value(True) == canonical_value("true") != canonical_value("True")
    assert canonical_value({"a": [1, "x"]}) == canonical_value({"a": ["1", "x"]})
    assert canonical_value("Paris") != canonical_value("paris")
    calls = read_calls(
        [
            {"name": "f", "label": "$x", "arguments": {}},
            {"name": "g", "parameters": '{"v": "$x.out"}', "label": "y"},
            {"name": "var_result", "arguments": {"r": "$y$"}},
            "not a call",
        ]
    )
    assert calls == [Call("f", {}, "x"), Call("g", {"v": "$x.out"}, "y")]
    assert relabel(calls) == [Call("f", {}, "var1"), Call("g", {"v": "$var1.out$"}, "var2")]


def test_gold_becomes_a_plan_and_back(copy: Path) -> None:
    bus = load_split("sgd", root=copy)[0]
    box = Toolbox.of(bus.tools)
    plan = gold_plan(bus.gold, box)
    assert plan["outputSteps"] == ["var2"]
    assert plan["steps"][1] == {
        "id": "var2",
        "tool": "Buses_BuyBusTicket",
        "parameters": {
            "origin": "{{var1.origin}}",
            "destination": "{{var1.destination}}",
            "departure_date": "2024-05-01",
            "departure_time": "{{var1.departure_time}}",
            "group_size": "2",
        },
    }
    assert gold_issues(bus.gold, box) == []
    back = plan_calls(plan, box)
    assert score_sample(read_calls(bus.gold), back).full

    executable = load_split("executable", root=copy)[0]
    box = Toolbox.of(executable.tools)
    step = gold_plan(executable.gold, box)["steps"][1]
    assert step["parameters"]["q"] == "umbrella for {{var1.forecast}}"
    assert gold_issues(executable.gold, box) == []


def test_gold_that_contradicts_its_specs_is_refused_by_the_validator(copy: Path) -> None:
    bus = load_split("sgd", root=copy)[0]
    box = Toolbox.of(bus.tools)
    wrong = json.loads(json.dumps(bus.gold))
    wrong[1]["arguments"]["departure_time"] = "$var1.arrival_time$"  # not an output of FindBus
    wrong[0]["arguments"]["fare_type"] = "Cheap"  # not an allowed value
    issues = gold_issues(wrong, box)
    assert any("arrival_time" in i for i in issues) and any("Cheap" in i for i in issues)


# -- the direct prompt and its readers ---------------------------------------------------------


def test_the_direct_prompt_is_nestfuls_qwen_prompt() -> None:
    box = Toolbox.of([SGD_SPECS[0]])
    system, user = messages(box.prompt_tools(), BUS["input"])
    assert system == {"role": "system", "content": SYSTEM}
    text = user["content"]
    assert text.startswith("[BEGIN OF TASK INSTRUCTION]\nYou are a tool calling assistant.")
    assert json.dumps(box.prompt_tools()) in text
    assert f"[BEGIN OF QUERY]\n{BUS['input']}\n[END OF QUERY]\n\n" in text
    assert text.count("#Example-") == 3 and examples_text() in text
    assert '{"name": "func_name1", "arguments"' in text  # the template's own braces stay
    assert "{FUNCTION_STR}" not in text and "{ICL_EXAMPLES}" not in text


def test_strict_reading_is_nestfuls_and_lenient_reading_takes_the_shape() -> None:
    calls = [{"name": "f", "arguments": {"a": 1}, "label": "$var_1"}]
    plain = json.dumps(calls)
    assert read_strict(plain) == calls == read_lenient(plain)
    fenced = f"```json\n{plain}\n```"
    assert read_strict(fenced) is None  # NESTFUL keeps the `json` tag: a parse error
    assert read_strict(f"```\n{plain}\n```") == calls
    assert read_lenient(f"Here:\n{fenced}\nDone.") == calls
    for refused in ("[]", "{}", '[{"arguments": {}}]', "No tool fits.", '{"name": "f"}'):
        assert read_strict(refused) is None, refused
    assert read_lenient('{"name": "f", "parameters": "{\\"a\\": 1}"}') == [
        {"name": "f", "arguments": {"a": 1}}
    ]
    assert read_lenient('{"tool_calls": [{"name": "f", "arguments": {}}]}') == [
        {"name": "f", "arguments": {}}
    ]
    hermes = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "g"}'
    assert [c["name"] for c in read_lenient(hermes) or []] == ["f", "g"]
    assert read_lenient("No tool fits.") is None and read_lenient("[]") is None


# -- metrics -----------------------------------------------------------------------------------


def test_metrics_follow_their_written_definitions() -> None:
    gold = [Call("a", {"x": 1}, "v1"), Call("b", {"y": "$v1.out$"}, "v2")]
    exact = [Call("a", {"x": "1"}, "s"), Call("b", {"y": "$s.out$"}, "t")]
    assert score_sample(gold, exact).full
    wrong_read = [Call("a", {"x": 1}, "v1"), Call("b", {"y": "$v1.other$"}, "v2")]
    extra = [Call("c", {}, "w"), *gold]
    scores = [
        score_sample(gold, exact),
        score_sample(gold, wrong_read),
        score_sample(gold, extra),
        score_sample(gold, None),
    ]
    assert [s.partial for s in scores] == [1.0, 0.5, 2 / 3, 0.0]
    total = aggregate(scores)
    assert (total.samples, total.full, total.no_answer) == (4, 1, 1)
    # names: hits 2 + 2 + 2 + 0 over answered 2 + 2 + 3 + 0 and expected 2 * 4
    assert total.f1_functions == pytest.approx(2 * 6 / (7 + 8))
    # (function, argument, value): hits 2 + 1 + 2 + 0 over 2 + 2 + 2 + 0 and 2 * 4
    assert total.f1_parameters == pytest.approx(2 * 5 / (6 + 8))
    assert total.partial == pytest.approx((1 + 0.5 + 2 / 3) / 4)


def test_an_argument_at_its_declared_default_can_be_read_as_omitted(copy: Path) -> None:
    """The gold writes declared defaults out; a call that leaves one out makes the same call.
    The second reading drops, on both sides, only the arguments equal to their default."""
    defaults = declared_defaults("sgd", root=copy)
    assert defaults == {"Buses.FindBus": {"fare_type": "Economy"}}
    assert declared_defaults("executable", root=copy) == {}  # none declared there
    with pytest.raises(ValueError, match="unknown NESTFUL split"):
        declared_defaults("train", root=copy)

    find = {"origin": "Boston", "destination": "New York"}
    gold = [Call("Buses.FindBus", {**find, "fare_type": "Economy"}, "v1")]
    omitted = [Call("Buses.FindBus", find, "s")]
    other_fare = [Call("Buses.FindBus", {**find, "fare_type": "Flexible"}, "s")]
    assert without_defaults(gold, defaults) == [Call("Buses.FindBus", find, "v1")]
    assert without_defaults(other_fare, defaults) == other_fare  # not the default: kept
    numbers = {"f": {"limit": 20}}
    assert without_defaults([Call("f", {"limit": "20"})], numbers) == [Call("f", {})]
    assert without_defaults([Call("f", {"limit": "$v1.n$"})], numbers)[0].arguments

    assert not score_sample(gold, omitted).full
    bare = score_sample(without_defaults(gold, defaults), without_defaults(omitted, defaults))
    assert bare.full and bare.parameter_hits == bare.gold_parameters == 2
    wrong = score_sample(without_defaults(gold, defaults), without_defaults(other_fare, defaults))
    assert not wrong.full and wrong.answer_parameters == 3 and wrong.parameter_hits == 2


def _fixture_pairs() -> list[tuple[dict[str, Any], list[dict[str, Any]] | None]]:
    return [(item, read_strict(item["reply"])) for item in FIXTURE["items"]]


def test_nestfuls_scorer_rederived_gives_the_numbers_it_printed() -> None:
    """The re-derivation (bench.nestful.official) against NESTFUL's scorer's own output, item
    by item and for the whole fixture."""
    pairs = _fixture_pairs()
    official = FIXTURE["official"]
    for item, answer in pairs:
        got = nestful_scores([(item["gold"], answer)])
        for key, expected in official["items"][item["id"]].items():
            assert got[key] == pytest.approx(expected, abs=5e-4), (item["id"], key)
    together = nestful_scores([(item["gold"], answer) for item, answer in pairs])
    for key, expected in official["group"].items():
        assert together[key] == pytest.approx(expected, abs=5e-4), key


OURS: dict[str, tuple[float, bool]] = {
    "exact": (1.0, True),
    "fenced": (0.0, False),  # strict reading: no answer, as NESTFUL
    "one-value-wrong": (0.5, False),
    "number-as-text": (1.0, True),  # difference 4: 2.0 is 2
    "missing-middle": (1 / 3, False),
    "extra-first": (2 / 3, False),  # difference 6: NESTFUL 0
    "swapped-reads": (2 / 3, False),  # difference 5: NESTFUL full
    "open-reference": (1.0, True),
    "called-twice": (2 / 3, False),  # difference 6: NESTFUL 0.25
    "empty-list": (0.0, False),
    "prose": (0.0, False),
}
"""The bench's partial and full accuracy per fixture item (strict reading)."""
DIFFERENT = {"number-as-text", "extra-first", "swapped-reads", "called-twice"}
"""The items where a deliberate difference (bench.nestful.metrics) changes the partial score."""


def test_our_metrics_agree_with_nestfuls_except_where_documented() -> None:
    official = FIXTURE["official"]
    scores = []
    for item, answer in _fixture_pairs():
        score = score_sample(
            read_calls(item["gold"]), None if answer is None else read_calls(answer)
        )
        scores.append(score)
        partial, full = OURS[item["id"]]
        assert (score.partial, score.full) == (pytest.approx(partial), full), item["id"]
        theirs = official["items"][item["id"]]["partial"]
        if item["id"] in DIFFERENT:
            assert theirs != pytest.approx(score.partial, abs=5e-4), item["id"]
        else:
            assert theirs == pytest.approx(score.partial, abs=5e-4), item["id"]
    total = aggregate(scores).to_json()
    assert total == {
        "samples": 11,
        "full": 3,
        "fullShare": 0.2727,
        "partial": 0.5303,
        "f1Functions": 0.766,  # NESTFUL's macro F1 intent: 0.794 (differences 1, 2)
        "f1Parameters": 0.7059,  # NESTFUL's F1 slot: 0.766 (differences 1-5)
        "noAnswer": 3,
    }
    assert official["group"]["full"] == pytest.approx(total["fullShare"], abs=5e-4)


def test_a_summary_counts_only_the_samples_every_contestant_answered() -> None:
    """A run cut short in the middle of a chunk leaves samples some contestants never saw:
    comparing on those would not be the same test."""
    from bench.nestful.run import summarize

    gold = BUS["output"]
    right = list(gold[:-1])

    def sample_row(i: str) -> dict[str, Any]:
        return {"type": "sample", "id": i, "split": "sgd", "gold": gold, "validGold": True}

    def answer(i: str, who: str, calls: Any) -> dict[str, Any]:
        usage = {"inputTokens": 1, "outputTokens": 1}
        return {
            "type": "answer",
            "id": i,
            "split": "sgd",
            "contestant": who,
            "answer": calls,
            "seconds": 1.0,
            "usage": usage,
        }

    rows = [
        sample_row("sgd-0"),
        sample_row("sgd-1"),
        answer("sgd-0", "python", right),
        answer("sgd-0", "nestful", None),
        answer("sgd-1", "python", right),  # nestful never answered sgd-1
    ]
    table = summarize(rows)["sgd"]
    assert table["samples"] == 1 and table["validGoldSamples"] == 1
    assert table["all"]["python"]["full"] == 1 and table["all"]["python"]["samples"] == 1
    assert table["all"]["nestful"]["noAnswer"] == 1
    assert "defaultsOmitted" not in table["all"]["python"]  # no defaults given: no reading


def test_a_summary_reads_declared_defaults_as_omitted_beside_the_plain_reading() -> None:
    from bench.nestful.run import markdown, summarize

    gold = [
        {"name": "f", "arguments": {"q": "bars", "limit": 20}, "label": "var1"},
        {"name": "var_result", "arguments": {"r": "$var1$"}},
    ]
    rows: list[dict[str, Any]] = [
        {"type": "sample", "id": "executable-0", "split": "executable", "gold": gold},
        *(
            {
                "type": "answer",
                "id": "executable-0",
                "split": "executable",
                "contestant": who,
                "answer": [{"name": "f", "arguments": arguments, "label": "var1"}],
                "seconds": 1.0,
                "usage": {"inputTokens": 1, "outputTokens": 1},
            }
            for who, arguments in (
                ("python", {"q": "bars"}),
                ("nestful-lenient", {"q": "bars", "limit": 20}),
            )
        ),
    ]
    rows[0]["validGold"] = True
    table = summarize(rows, {"executable": {"f": {"limit": 20}}})["executable"]["all"]
    assert table["python"]["full"] == 0 and table["nestful-lenient"]["full"] == 1
    assert table["python"]["defaultsOmitted"]["full"] == 1
    assert table["python"]["defaultsOmitted"]["f1Parameters"] == 1.0
    assert table["nestful-lenient"]["defaultsOmitted"]["f1Parameters"] == 1.0
    text = markdown(summarize(rows, {"executable": {"f": {"limit": 20}}}))
    assert "an argument at its declared default read as omitted" in text
    assert "| toolplan, Python plan (default) | 1/1 (100.0%) | 1.000 | 1.000 |" in text


def _run_rows(answer_calls: Any) -> list[dict[str, Any]]:
    """One run's rows: ``sgd-0`` (the bus chain) answered by toolplan with ``answer_calls``
    and by NESTFUL's prompt with nothing."""
    return [
        {"type": "sample", "id": "sgd-0", "split": "sgd", "gold": BUS["output"], "validGold": True},
        *(
            {
                "type": "answer",
                "id": "sgd-0",
                "split": "sgd",
                "contestant": who,
                "answer": calls,
                "seconds": 1.0,
                "usage": {"inputTokens": 1, "outputTokens": 1},
            }
            for who, calls in (("python", answer_calls), ("nestful", None))
        ),
    ]


def test_runs_with_other_seeds_are_pooled_sample_by_sample() -> None:
    """Seeds draw some samples alike (with other distractors): pooled, each run's sample counts
    on its own, not the last run's answer for both."""
    from bench.nestful.run import pooled, summarize

    right, wrong = list(BUS["output"][:-1]), None
    runs = [_run_rows(right), _run_rows(wrong)]
    assert pooled(runs[:1]) == runs[0]  # one run is read as it is
    table = summarize(pooled(runs))["sgd"]
    assert table["samples"] == 2
    assert table["all"]["python"]["full"] == 1 and table["all"]["python"]["noAnswer"] == 1
    assert table["all"]["nestful"]["noAnswer"] == 2
    # read as one run, the second sample's rows overwrite the first's
    assert summarize(runs[0] + runs[1])["sgd"]["samples"] == 1


def test_summarize_pools_several_runs_and_refuses_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.nestful.__main__ import main

    monkeypatch.setenv("NESTFUL_DATA", str(write_copy(tmp_path / "copy")))
    files = []
    for k, calls in enumerate((list(BUS["output"][:-1]), None)):
        path = tmp_path / f"seed{k}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in _run_rows(calls)))
        files.append(str(path))
    assert main(["--summarize", *files]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Pooled over 2 runs (#1 {files[0]}, #2 {files[1]}).")
    assert "| toolplan, Python plan (default) | 1/2 (50.0%) |" in out
    assert "declared default read as omitted" in out
    assert main(["--summarize", files[0], str(tmp_path / "absent.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot read the rows" in captured.err
    assert main(["--summarize", files[0], files[0]]) == 2
    assert "given twice" in capsys.readouterr().err


def test_the_tuning_splits_are_also_summarized_together_with_cost_against_nestfuls_prompt() -> None:
    """The issue holds toolplan to the tuning splits as a whole, and bounds its latency and
    output tokens against NESTFUL's prompt on the same samples."""
    from bench.nestful.run import POOLED, summarize

    gold = BUS["output"]
    right = list(gold[:-1])

    def sample_row(i: str, split: str, valid: bool) -> dict[str, Any]:
        return {"type": "sample", "id": i, "split": split, "gold": gold, "validGold": valid}

    def answer(i: str, split: str, who: str, seconds: float, tokens: int) -> dict[str, Any]:
        return {
            "type": "answer",
            "id": i,
            "split": split,
            "contestant": who,
            "answer": right if who == "python" else None,
            "seconds": seconds,
            "usage": {"inputTokens": 1, "outputTokens": tokens},
        }

    rows = [
        sample_row("sgd-0", "sgd", True),
        sample_row("executable-0", "executable", False),
        answer("sgd-0", "sgd", "python", 3.0, 30),
        answer("sgd-0", "sgd", "nestful", 2.0, 10),
        answer("executable-0", "executable", "python", 5.0, 50),
        answer("executable-0", "executable", "nestful", 4.0, 30),
    ]
    summary = summarize(rows)
    both = summary[POOLED]
    assert both["samples"] == 2 and both["validGoldSamples"] == 1
    assert both["all"]["python"]["full"] == 2 and both["validGold"]["python"]["samples"] == 1
    assert both["all"]["nestful"]["noAnswer"] == 2
    # medians 4.0 s and 40 tokens against 3.0 s and 20 tokens
    assert both["costAgainst"] == {"python": {"medianSeconds": 1.33, "medianOutputTokens": 2.0}}
    assert summary["sgd"]["costAgainst"]["python"]["medianSeconds"] == 1.5
    # a lone split, or a test split beside a tuning one, is not pooled
    assert POOLED not in summarize(rows[:1] + rows[2:4])
