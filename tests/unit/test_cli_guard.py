"""The CLI's last line of defence: a bug is still one line, and one JSON object with --json."""

from __future__ import annotations

import json

import pytest
import typer

from toolplan.cli import output


def _boom() -> None:
    raise RuntimeError("something\nunexpected")


def test_an_unexpected_exception_is_one_line_and_one_json_object(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(output.DEBUG_ENV, raising=False)
    with pytest.raises(typer.Exit) as caught:
        output.guard(_boom, as_json=True)
    assert caught.value.exit_code == 1
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert out.count("\n") == 1 and payload["exitCode"] == 1
    assert "internal error: RuntimeError: something unexpected" in payload["error"]
    assert "Traceback" not in err and output.DEBUG_ENV in err

    monkeypatch.setenv(output.DEBUG_ENV, "1")
    with pytest.raises(typer.Exit):
        output.guard(_boom, as_json=False)
    assert "Traceback" in capsys.readouterr().err


def test_json_output_survives_lone_surrogates(capsys: pytest.CaptureFixture[str]) -> None:
    output.emit_json({"output": "bad \udcff byte"})
    assert json.loads(capsys.readouterr().out) == {"output": "bad \udcff byte"}
