"""A disk cache in front of any backend, so re-runs and resumed runs make no model calls.

The key is a hash of everything that can change a reply: the operation, the
backend's fingerprint (kind, model file sha256, runtime version, settings) and
the whole request (messages as rendered text, schema or candidates, max_tokens,
temperature, seed). Requests that sample without a fixed seed are never cached.

The wrapper also counts what judging cost (calls, hits, tokens), in total and per
thread: a run reads these for its report. Without a store it caches nothing and
only counts.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import diskcache
from pydantic import BaseModel

from localeval.backends.base import (
    Backend,
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    JudgeUsage,
    TextBackend,
    TextReply,
    TextRequest,
    Usage,
)
from localeval.errors import BackendError, InputError

#: Bump when the stored reply format changes, so old entries stop matching.
CACHE_FORMAT = 1

Reply = TypeVar("Reply", JsonReply, DistributionReply, TextReply)


@dataclass
class CacheStats:
    """Counts since the wrapper was made: answers from disk, calls that reached the model, and
    the tokens of those calls (a hit costs none)."""

    hits: int = 0
    model_calls: int = 0
    uncacheable: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def usage(self) -> JudgeUsage:
        return JudgeUsage(
            model_calls=self.model_calls, cache_hits=self.hits,
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
        )


def cache_key(operation: str, fingerprint: Fingerprint, request: BaseModel) -> str:
    """The hex sha256 of a canonical JSON of the operation, fingerprint and request."""
    payload = {
        "format": CACHE_FORMAT,
        "operation": operation,
        "fingerprint": fingerprint.model_dump(mode="json"),
        "request": request.model_dump(mode="json"),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CacheUnusable(InputError):
    """The cache folder cannot be opened: a read-only or full file system, no permission."""


class CacheDamaged(CacheUnusable):
    """The cache's database is not one, or is cut short: ``localeval cache clear`` removes it."""


#: The files of diskcache's store in its folder: the database, its journal files, and the values
#: too large for it (``ab/cd/….val``).
STORE_FILES = ("cache.db", "cache.db-wal", "cache.db-shm", "[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/*.val")


def open_cache(directory: Path) -> diskcache.Cache:
    """The on-disk store; diskcache makes it safe across threads and processes.

    Raises :class:`CacheDamaged` (naming the database and how to clear it) or
    :class:`CacheUnusable` (a read-only folder, say: with ``--no-cache`` as the way around).
    """
    try:
        return diskcache.Cache(str(directory), size_limit=2**32)
    except (sqlite3.DatabaseError, OSError) as err:
        raise _unusable(directory, err) from err


def remove_store(directory: Path) -> None:
    """Delete the files of the store in ``directory`` (a damaged one: it cannot be opened to clear)."""
    for pattern in STORE_FILES:
        for path in directory.glob(pattern):
            path.unlink()
    for folder in sorted(directory.glob("[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]"), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    for folder in directory.glob("[0-9a-f][0-9a-f]"):
        if not any(folder.iterdir()):
            folder.rmdir()


def _unusable(directory: Path, err: sqlite3.DatabaseError | OSError) -> CacheUnusable:
    """Why the store in ``directory`` did not open, as one line that says what to do."""
    around = "run with --no-cache, or give a writable --cache-dir"
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only or (isinstance(err, OSError) and err.errno == errno.EROFS):
        return CacheUnusable(f"{directory}: the cache folder is on a read-only file system; {around}")
    if isinstance(err, OSError) or isinstance(err, sqlite3.OperationalError):  # the system's refusal, not the data
        reason = err.strerror if isinstance(err, OSError) else str(err)
        return CacheUnusable(f"{directory}: cannot open the cache ({reason}); {around}")
    return CacheDamaged(
        f"{directory / 'cache.db'}: the cache is damaged ({err}); clear it with: "
        f"localeval cache clear --cache-dir {directory} (or run with --no-cache)"
    )


@dataclass
class _KeyLock:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0  #: threads holding or waiting for it


class KeyLocks:
    """A lock per cache key, for as long as a thread holds it or waits for it (single flight).

    Two threads asking the same uncached request make one model call: the second
    waits, then finds the first one's reply on disk. Different requests never wait
    for each other (a lock per stripe of keys would make unrelated calls queue).
    A key's lock is forgotten when its last user leaves, so a long run keeps none.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, _KeyLock] = {}

    def __len__(self) -> int:
        """The keys held or waited for now."""
        with self._guard:
            return len(self._locks)

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Hold ``key``'s lock for the block (waiting while another thread holds it)."""
        with self._guard:
            entry = self._locks.setdefault(key, _KeyLock())
            entry.users += 1
        try:
            with entry.lock:
                yield
        finally:
            with self._guard:
                entry.users -= 1
                if not entry.users:
                    del self._locks[key]


class CachedBackend:
    """Wraps a backend; answers repeated deterministic requests from disk (``store``; None: never).

    Safe to share between threads: the counts are kept in total and per thread
    (so a runner can say what one metric's result cost), and two threads asking
    the same uncached request wait for one model call instead of making two
    (:class:`KeyLocks`); different requests run at once.
    """

    def __init__(self, backend: Backend, store: diskcache.Cache | None) -> None:
        self.backend = backend
        self.store = store
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._key_locks = KeyLocks()
        self._local = threading.local()

    def thread_stats(self) -> CacheStats:
        """A copy of the counts of the calls made on the current thread."""
        local = getattr(self._local, "stats", None)
        return CacheStats() if local is None else CacheStats(**vars(local))

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def fingerprint(self) -> Fingerprint:
        return self.backend.fingerprint

    def close(self) -> None:
        """Close the wrapped backend; the store is its opener's to close."""
        self.backend.close()

    def generate_json(self, request: JsonRequest) -> JsonReply:
        if self.store is None or not request.deterministic:
            self._count("uncacheable")
            return self._called(self.backend.generate_json(request))
        return self._cached("generate_json", request, JsonReply, self.backend.generate_json)

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        if self.store is None:
            self._count("uncacheable")
            return self._called(self.backend.candidate_distribution(request))
        return self._cached(
            "candidate_distribution", request, DistributionReply, self.backend.candidate_distribution
        )

    def generate_text(self, request: TextRequest) -> TextReply:
        """Free text (a target's output), cached like JSON: only when the request is deterministic."""
        backend = self.backend
        if not isinstance(backend, TextBackend):
            raise BackendError(f"the {self.fingerprint.kind} backend does not generate free text")
        if self.store is None or not request.deterministic:
            self._count("uncacheable")
            return self._called(backend.generate_text(request))
        return self._cached("generate_text", request, TextReply, backend.generate_text)

    def _cached(
        self, operation: str, request: BaseModel, reply_type: type[Reply], call: Callable[[Any], Reply]
    ) -> Reply:
        store = self.store
        if store is None:  # callers check; this keeps the type checker sure of it
            return self._called(call(request))
        key = cache_key(operation, self.fingerprint, request)
        with self._key_locks.hold(key):
            stored = store.get(key)
            if stored is not None:
                self._count("hits")
                return reply_type.model_validate_json(stored)
            reply = self._called(call(request))
            store.set(key, reply.model_dump_json())
        return reply

    def _called(self, reply: Reply) -> Reply:
        """Count a call that reached the model, with its tokens."""
        usage: Usage = reply.usage
        self._count("model_calls")
        self._count("prompt_tokens", usage.prompt_tokens)
        self._count("completion_tokens", usage.completion_tokens)
        return reply

    def _count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + amount)
        if not hasattr(self._local, "stats"):
            self._local.stats = CacheStats()
        setattr(self._local.stats, name, getattr(self._local.stats, name) + amount)
