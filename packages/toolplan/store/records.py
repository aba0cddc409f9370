"""What toolplan keeps in a store's records, each kind under its own typed role.

A store's :class:`~toolplan.store.protocol.RecordStore` holds documents in named collections.
The built-in toolsets keep theirs there (authors, posts: :mod:`toolplan.builtin_tools._records`),
and so does toolplan, in the collections below, each a :class:`RecordCollection` that names the
collection and the shape of its records, so that whoever writes or reads one says what it
stores:

- :data:`EARLY_CALLS`: the calls started while the model wrote a plan (streamed execution,
  :mod:`toolplan.pipeline.early_start`), one record per change of state, never updated;
- :data:`PLAN_INDEX`: the stored plans a later query may reuse (:mod:`toolplan.service.plan_index`);
- :data:`ANSWERS`: the agent loop's answers, one per answered request version
  (:mod:`toolplan.agent.graph`, ``toolplan show REQ``).

The collections and their fields are the ones stored before these roles had types: a store
written by an earlier version reads the same.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from typing_extensions import TypedDict

from toolplan.store.protocol import RecordStore

__all__ = [
    "ANSWERS",
    "EARLY_CALLS",
    "PLAN_INDEX",
    "AgentAnswer",
    "EarlyCall",
    "PlanIndexEntry",
    "RecordCollection",
]

R = TypeVar("R", bound=Mapping[str, Any])


@dataclass(frozen=True)
class RecordCollection(Generic[R]):
    """One collection of a :class:`~toolplan.store.protocol.RecordStore`, holding records of
    type ``R`` (each with the ``_id`` the store gives it)."""

    name: str
    """The collection's name in the store."""

    def put(
        self,
        store: RecordStore,
        record: R,
        *,
        idempotency_key: str | None = None,
        lookup_keys: Sequence[str] = (),
    ) -> R:
        """Insert ``record`` (:meth:`RecordStore.put_record`): with an idempotency key already
        used in this collection, the earlier record is returned instead."""
        return cast(
            R,
            store.put_record(
                self.name, dict(record), idempotency_key=idempotency_key, lookup_keys=lookup_keys
            ),
        )

    def find(
        self,
        store: RecordStore,
        where: Mapping[str, Any],
        *,
        lookup_keys: Collection[str] | None = None,
    ) -> list[R]:
        """The records whose fields equal ``where``, oldest first; with ``lookup_keys``, only
        those put with one of them (:meth:`RecordStore.find_records`)."""
        return cast(list[R], store.find_records(self.name, where, lookup_keys=lookup_keys))


class EarlyCall(TypedDict, total=False):
    """A state of one call started while the model wrote its plan."""

    scope: str
    """The request (or, without one, the query) the planning was for: its lookup key."""
    planId: str
    requestId: str | None
    step: str
    tool: str
    call: str | None
    """The call's cache key (tool and arguments)."""
    status: str
    """``running``, ``succeeded``, ``failed``; then ``adopted``, ``cancelled`` or ``unused``."""
    at: float
    """When, in seconds since the epoch."""
    recordedAt: str
    arguments: Any
    output: Any
    error: str
    recalledFrom: str
    settledBy: str
    """The planning that settled a call of an interrupted one."""
    adoptedBy: str
    """The planning that took an interrupted one's output."""


class PlanIndexEntry(TypedDict):
    """A stored plan a later query may reuse."""

    fingerprint: str
    """The catalog's fingerprint: a plan is never reused across catalogs."""
    key: str
    """The normalised query."""
    planId: str
    query: str
    pattern: str | None
    """The query's slot pattern (a regular expression), when it has one."""
    prefix: str | None
    suffix: str | None


class AgentAnswer(TypedDict):
    """The agent loop's answer to one version of a request."""

    requestId: str
    planId: str
    answer: str
    plans: list[dict[str, Any]]
    llmCalls: int
    usage: dict[str, int] | None


EARLY_CALLS: RecordCollection[EarlyCall] = RecordCollection("toolplan_early_steps")
PLAN_INDEX: RecordCollection[PlanIndexEntry] = RecordCollection("toolplan_plan_index")
ANSWERS: RecordCollection[AgentAnswer] = RecordCollection("toolplan_answers")
