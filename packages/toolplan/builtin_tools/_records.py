"""Where toolset tools keep their records: the configured store, found through the run config."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig

__all__ = ["MemoryRecords", "Records", "records_for"]


class MemoryRecords:
    """Toolset records in process memory: the fallback when a toolset tool is called outside
    toolplan (no store), and the record half of in-memory stores."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, list[dict[str, Any]]] = {}
        self._keys: dict[tuple[str, str], dict[str, Any]] = {}
        self._lookup: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
        self._seq = 0

    def put_record(
        self,
        collection: str,
        record: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        lookup_keys: Sequence[str] = (),
    ) -> dict[str, Any]:
        with self._lock:
            if idempotency_key is not None and (collection, idempotency_key) in self._keys:
                return self._keys[(collection, idempotency_key)]
            stored = {"_id": secrets.token_hex(12), **record}
            self._docs.setdefault(collection, []).append(stored)
            if idempotency_key is not None:
                self._keys[(collection, idempotency_key)] = stored
            self._seq += 1
            for key in set(lookup_keys):
                self._lookup.setdefault((collection, key), []).append((self._seq, stored))
            return stored

    def find_records(
        self,
        collection: str,
        where: Mapping[str, Any],
        *,
        lookup_keys: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        with self._lock:
            if lookup_keys is None:
                docs = list(self._docs.get(collection, []))
            else:
                found = {
                    seq: doc
                    for key in set(lookup_keys)
                    for seq, doc in self._lookup.get((collection, key), [])
                }
                docs = [found[seq] for seq in sorted(found)]
        return [d for d in docs if all(d.get(k) == v for k, v in where.items())]


_FALLBACK = MemoryRecords()


class Records:
    """Record access for one tool call, carrying the call's idempotency key."""

    def __init__(self, config: RunnableConfig | None) -> None:
        from toolplan.engine.step import STORE_CONFIG_KEY

        configurable = (config or {}).get("configurable") or {}
        self._backend: Any = configurable.get(STORE_CONFIG_KEY) or _FALLBACK
        self.idempotency_key: str | None = ((config or {}).get("metadata") or {}).get(
            "idempotency_key"
        )

    def insert(self, collection: str, record: dict[str, Any]) -> dict[str, Any]:
        """Insert once per idempotency key: a resumed step gets its earlier record back."""
        result: dict[str, Any] = self._backend.put_record(
            collection, record, idempotency_key=self.idempotency_key
        )
        return result

    def find(self, collection: str, **where: Any) -> list[dict[str, Any]]:
        """Records equal to ``where`` on every given field."""
        found: list[dict[str, Any]] = self._backend.find_records(collection, where)
        return found


def records_for(config: RunnableConfig | None) -> Records:
    """Record access for the tool call that received ``config``."""
    return Records(config)
