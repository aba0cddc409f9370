"""The steps of a plan the model is still writing: each one as soon as its JSON object is complete.

:class:`StepScanner` reads the answer's text as it streams (the tool call's arguments, or the
message content) and returns the text of every object of the plan's ``steps`` list once its
closing brace arrives, without waiting for the rest of the plan. It only finds where steps begin
and end (strings, escapes and nesting are followed, everything else is skipped), so it works on
answers with prose or a markdown fence around the plan, wrapped in ``{"name", "arguments"}``, or
with a template written without quotes (``{{a.b}}``): reading the step's text is
:func:`toolplan.planning.parsing.loads_lenient`'s job, and reading the whole answer is still the
one :func:`~toolplan.planning.parsing.read_plan` once it is complete. What is found here is only
shown, never planned with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StepScanner"]


@dataclass
class _Frame:
    """An open object or list of the answer."""

    kind: str
    """``{`` or ``[``."""
    key: str | None = None
    """An object: the key whose value comes next; a list: the key it is the value of."""
    steps: bool = False
    """This list is the plan's ``steps``."""
    start: int = 0
    """Where the frame opened in the text."""


@dataclass
class StepScanner:
    """Feed it the answer's text piece by piece; it returns the text of each step completed."""

    text: str = ""
    _at: int = 0
    _stack: list[_Frame] = field(default_factory=list)
    _in_string: bool = False
    _escape: bool = False
    _string_start: int = 0
    _expect_key: bool = False
    _last_key: str | None = None
    _done: bool = False
    """The plan's ``steps`` list has closed: nothing more to find."""
    _found_steps: bool = False

    def feed(self, piece: str) -> list[str]:
        """Add ``piece`` to the answer; the steps it completed, as JSON text, in order."""
        self.text += piece
        found: list[str] = []
        while self._at < len(self.text) and not self._done:
            self._scan(self.text[self._at], found)
            self._at += 1
        return found

    def _scan(self, char: str, found: list[str]) -> None:
        if self._in_string:
            if self._escape:
                self._escape = False
            elif char == "\\":
                self._escape = True
            elif char == '"':
                self._in_string = False
                if self._expect_key and self._stack and self._stack[-1].kind == "{":
                    self._last_key = self.text[self._string_start + 1 : self._at]
            return
        if char == '"':
            self._in_string, self._string_start = True, self._at
        elif char == "{":
            self._stack.append(_Frame("{", start=self._at))
            self._expect_key = True
        elif char == "[":
            parent = self._stack[-1] if self._stack else None
            key = parent.key if parent is not None and parent.kind == "{" else None
            steps = key == "steps" and not self._found_steps
            self._found_steps = self._found_steps or steps
            self._stack.append(_Frame("[", key=key, steps=steps, start=self._at))
            self._expect_key = False
        elif char in "}]":
            self._close(char, found)
        elif char == ":" and self._stack and self._stack[-1].kind == "{":
            self._stack[-1].key = self._last_key
            self._expect_key = False
        elif char == ",":
            self._expect_key = bool(self._stack) and self._stack[-1].kind == "{"

    def _close(self, char: str, found: list[str]) -> None:
        if not self._stack or self._stack[-1].kind != ("{" if char == "}" else "["):
            return  # not JSON here (prose, a stray bracket): nothing to close
        frame = self._stack.pop()
        parent = self._stack[-1] if self._stack else None
        if frame.kind == "{" and parent is not None and parent.steps:
            found.append(self.text[frame.start : self._at + 1])
        if frame.steps:
            self._done = True
        self._expect_key = False
