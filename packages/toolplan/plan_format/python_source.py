"""A Python plan's text cut into its top-level statements, as it arrives: each character looked at
once, so reading an answer streamed 4 characters at a time costs what reading it whole does.

:class:`SourceSplitter` is fed text (:meth:`~SourceSplitter.feed`) and tells, in order:

- :class:`Statement`: one complete top-level statement (with its ``if``/``else`` or loop body),
  complete once a later line starts at the left margin, its block's fence closes, or the text
  ends (:meth:`~SourceSplitter.finish`);
- :class:`SourceProblem`: what stops the reading, with its line and column: a NUL character,
  brackets or unary operators nested deeper than the limit, more text than a plan may have, a
  fenced block in another language;
- :class:`Restart`: what was read as code turned out to be prose before the answer's first
  fenced block: everything read so far is void.

A model's answer (``fences=True``) is its fenced blocks, every one, in order, with the text
around them ignored; an answer with no fence is code from its first line. A plan file
(``fences=False``) is code throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from toolplan.plan_format.limits import InputLimits

__all__ = ["Restart", "SourceEvent", "SourceProblem", "SourceSplitter", "Statement"]

_CODE_LANGUAGES = frozenset({"", "python", "py", "python3", "py3"})
_CONTINUING = ("else", "elif", "except", "finally")
_COMPOUND = frozenset({"if", "for", "while", "try", "async"})
_OPENING, _CLOSING = "([{", ")]}"
_UNARY = "-+~"


@dataclass(frozen=True)
class Statement:
    """One top-level statement of the code."""

    text: str
    """Its source, from the left margin (its first line at column 0)."""
    line: int
    """The line of the whole text it starts on (1-based)."""
    block: int
    """The fenced block it is in (1, 2, ...); 0 in code without fences."""


@dataclass(frozen=True)
class SourceProblem:
    """Why reading stops."""

    line: int
    column: int
    message: str


@dataclass(frozen=True)
class Restart:
    """The code read so far was prose before a fenced block: forget it."""


SourceEvent = Statement | SourceProblem | Restart


@dataclass
class _Lexer:
    """Where the code stands between two characters: open brackets and strings."""

    depth: int = 0
    quote: str = ""
    """The open string's quote (``'``, ``"``, ``'''`` or ``\"\"\"``); empty outside one."""
    unary: int = 0
    """Unary operators in a row (``- - -x``), which nest as brackets do."""

    @property
    def open(self) -> bool:
        """Inside brackets or a string: the line goes on on the next one."""
        return self.depth > 0 or bool(self.quote)


@dataclass
class SourceSplitter:
    """Cuts text into top-level statements as it is fed (see the module)."""

    fences: bool = True
    limits: InputLimits = field(default_factory=InputLimits)
    _partial: list[str] = field(default_factory=list)
    """The line being written (chunks not yet ended by a newline)."""
    _line: int = 0
    """Lines taken so far."""
    _size: int = 0
    _mode: str = "start"
    """``start`` (nothing but blank lines yet), ``loose`` (code without fences), ``fenced``."""
    _in_block: bool = False
    _blocks: int = 0
    _pending: list[str] = field(default_factory=list)
    _pending_line: int = 0
    _lexer: _Lexer = field(default_factory=_Lexer)
    _continued: bool = False
    """The last line ended in a backslash."""
    _stopped: bool = False

    def feed(self, chunk: str) -> list[SourceEvent]:
        """What ``chunk`` completes."""
        return list(self.events(chunk))

    def events(self, chunk: str) -> Iterator[SourceEvent]:
        """What ``chunk`` completes, line by line as it is looked at: a caller that stops
        taking them (its reading stopped, at the step limit) leaves the rest of ``chunk``
        unlooked at, and the splitter stops there (what is fed after tells nothing)."""
        if self._stopped or not chunk:
            return
        try:
            yield from self._events(chunk)
        except GeneratorExit:
            self._stopped = True  # left mid-chunk: what follows could not be read in place
            raise

    def _events(self, chunk: str) -> Iterator[SourceEvent]:
        self._size += len(chunk)
        if self._size > self.limits.max_plan_bytes:
            self._stopped = True
            yield SourceProblem(
                self._line + 1,
                1,
                f"the plan is longer than {self.limits.max_plan_bytes:,} characters "
                "(TOOLPLAN_MAX_PLAN_BYTES)",
            )
            return
        start = 0
        while not self._stopped:
            end = chunk.find("\n", start)
            if end < 0:
                self._partial.append(chunk[start:])
                break
            self._partial.append(chunk[start : end + 1])
            line, self._partial = "".join(self._partial), []
            start = end + 1
            yield from self._take(line)
        if self._partial and self._pending and self._in_code() and not self._stopped:
            # The line being written already begins the next statement: the pending one is
            # complete (looked at once: its first word, until that word is known).
            head = "".join(self._partial[:2]) if len(self._partial) > 1 else self._partial[0]
            if (
                not self._lexer.open
                and not self._continued
                and _begins_statement(head, self._may_go_on())
            ):
                yield from self._flush()

    def _may_go_on(self) -> bool:
        """Whether the pending statement may take an ``else``/``except`` clause still."""
        for line in self._pending:
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                return stripped.split(None, 1)[0].rstrip(":") in _COMPOUND
        return False

    def _in_code(self) -> bool:
        return self._mode == "loose" or (self._mode == "fenced" and self._in_block)

    def finish(self) -> list[SourceEvent]:
        """The text ended: its last line and statement are complete."""
        events: list[SourceEvent] = []
        if self._partial and not self._stopped:
            line, self._partial = "".join(self._partial), []
            events += self._take(line)
        if not self._stopped:
            events += self._flush()
        self._stopped = True
        return events

    # -- lines -------------------------------------------------------------------------------

    def _take(self, line: str) -> list[SourceEvent]:
        self._line += 1
        if "\x00" in line:
            self._stopped = True
            return [SourceProblem(self._line, line.index("\x00") + 1, _NUL)]
        fence = self._fence(line) if self.fences else None
        if self._mode == "start":
            if not line.strip():
                return []
            if fence is not None:
                self._mode = "fenced"
                return self._open_block(fence)
            self._mode = "loose"
            return self._code(line)
        if self._mode == "loose":
            if fence is None:
                return self._code(line)
            # prose, written before the answer's first block: what it held is void
            self._mode, self._pending, self._lexer = "fenced", [], _Lexer()
            self._continued = False
            return [Restart(), *self._open_block(fence)]
        if not self._in_block:
            return self._open_block(fence) if fence is not None else []  # prose between blocks
        if fence is not None and not self._lexer.quote:
            self._in_block = False
            events = self._flush()
            self._lexer, self._continued = _Lexer(), False
            return events
        return self._code(line)

    @staticmethod
    def _fence(line: str) -> str | None:
        """The language of a fence line (``""`` for none), or ``None`` for any other line."""
        stripped = line.strip()
        if not stripped.startswith("```"):
            return None
        return stripped[3:].strip().lower()

    def _open_block(self, language: str) -> list[SourceEvent]:
        self._blocks += 1
        self._in_block = True
        if (language.split()[0] if language else "") not in _CODE_LANGUAGES:
            self._stopped = True
            return [
                SourceProblem(
                    self._line,
                    1,
                    f"the answer's block {self._blocks} is {language}, not Python: write the "
                    "whole plan in python blocks, and nothing else in a block",
                )
            ]
        return []

    def _code(self, line: str) -> list[SourceEvent]:
        events: list[SourceEvent] = []
        starts = not self._lexer.open and not self._continued and _starts_statement(line)
        if starts:
            events += self._flush()
            self._pending_line = self._line
        elif not self._pending and not line.strip():
            return []  # blank lines before a statement belong to none
        elif not self._pending:
            self._pending_line = self._line
        self._pending.append(line)
        problem = self._scan(line)
        if problem is not None:
            self._stopped = True
            events.append(problem)
        return events

    def _flush(self) -> list[SourceEvent]:
        if not self._pending:
            return []
        text, self._pending = "".join(self._pending), []
        if not text.strip():
            return []
        return [Statement(text, self._pending_line, self._blocks if self._mode == "fenced" else 0)]

    def _scan(self, line: str) -> SourceProblem | None:
        """Follow ``line``'s brackets and strings (each character once); a problem when they
        nest deeper than the limit."""
        lexer, limit = self._lexer, self.limits.max_depth
        index, length = 0, len(line)
        self._continued = False
        while index < length:
            char = line[index]
            if lexer.quote:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(lexer.quote, index):
                    index += len(lexer.quote)
                    lexer.quote = ""
                    continue
                if len(lexer.quote) == 1 and char == "\n":
                    lexer.quote = ""  # an unclosed string: the parser will say so
                index += 1
                continue
            if char in "'\"":
                triple = char * 3
                lexer.quote = triple if line.startswith(triple, index) else char
                index += len(lexer.quote)
                lexer.unary = 0
                continue
            if char == "#":
                break
            if char == "\\" and line[index + 1 : index + 2] in ("\n", "\r", ""):
                self._continued = True
                break
            if char in _OPENING:
                lexer.depth += 1
                if lexer.depth > limit:
                    return SourceProblem(self._line, index + 1, _too_deep(limit))
            elif char in _CLOSING:
                lexer.depth = max(0, lexer.depth - 1)
            if char in _UNARY:
                lexer.unary += 1
                if lexer.unary > limit:
                    return SourceProblem(self._line, index + 1, _too_deep(limit))
            elif not char.isspace():
                lexer.unary = 0
            index += 1
        return None


def _begins_statement(head: str, may_go_on: bool) -> bool:
    """Whether a line that begins with ``head`` (more may follow) is sure to start a new
    statement: no fence, comment or closing bracket, and, after a statement that ``may_go_on``
    (an ``if``, ``for``, ``try``), a first word written out that is no ``else``/``elif``/...
    (``e`` may still become ``else``)."""
    if not head or head[0].isspace() or head[0] in "#)]}`":
        return False
    if not may_go_on:
        return True
    length = 0
    while length < len(head) and (head[length].isalnum() or head[length] == "_"):
        length += 1
    if length == len(head):  # the word may go on
        return not any(word.startswith(head) for word in _CONTINUING)
    return head[:length] not in _CONTINUING


def _starts_statement(line: str) -> bool:
    """Whether ``line`` begins a new top-level statement (not a continuation, an ``else``, a
    comment, a blank line or a closing bracket)."""
    if not line.strip() or line[0].isspace() or line.startswith(("#", ")", "]", "}")):
        return False
    word = line.split(None, 1)[0].rstrip(":")
    return word not in _CONTINUING


_NUL = "a NUL character is not part of a plan: remove it"


def _too_deep(limit: int) -> str:
    return (
        f"brackets or signs nest more than {limit} deep (TOOLPLAN_MAX_DEPTH): a plan's values "
        "are not nested that far"
    )
