"""Query answers kept per (query, epoch), so that paging through an answer evaluates it once.

A page of `POST /v1/query` used to evaluate the whole query again and skip to its cursor:
paging through 21,000 answers took 55 s where one evaluation takes 2.4 s. A published epoch's
state never changes (an epoch is the facts and rules committed up to it, and symbols keep their
numbers across restarts), so the sorted answer of a query at an epoch is the same however
often it is asked: it is kept here and each page is a slice of it.

- Bounded by rows: the least recently used answers go first; an answer larger than the whole
  bound is never kept. An answer that was dropped is evaluated again, never guessed.
- One evaluation per key at a time: a request for an answer being evaluated waits for it
  instead of evaluating it too (a client paging quickly, or many clients asking one query).
  A failed evaluation (timeout, too many rows) is not kept: each waiter then evaluates for
  itself, under its own deadline.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from reasoner import QueryResult, QueryTimeout

Key = tuple[str, int]
"""The query's text and the epoch it is answered at."""


class QueryAnswers:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._answers: OrderedDict[Key, QueryResult] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()
        self._evaluating: dict[Key, threading.Lock] = {}

    def answer(
        self, key: Key, evaluate: Callable[[], QueryResult], deadline: float
    ) -> tuple[QueryResult, bool]:
        """The answer at `key`, and whether it was kept from an earlier request; else
        `evaluate()`'s, kept if it fits. Waiting for another request's evaluation of it past
        `deadline` (`time.monotonic()`) raises `QueryTimeout`, as evaluating would."""
        with self._lock:
            kept = self._take(key)
            if kept is not None:
                return kept, True
            turn = self._evaluating.setdefault(key, threading.Lock())
        if not turn.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise QueryTimeout(0.0)  # the caller states its own deadline
        with _held(turn):  # another request evaluating this key has finished
            with self._lock:
                kept = self._take(key)
                if kept is not None:
                    return kept, True
            try:
                result = evaluate()
            finally:
                with self._lock:
                    if self._evaluating.get(key) is turn:
                        del self._evaluating[key]
            self._keep(key, result)
            return result, False

    def _take(self, key: Key) -> QueryResult | None:
        result = self._answers.get(key)
        if result is not None:
            self._answers.move_to_end(key)
        return result

    def _keep(self, key: Key, result: QueryResult) -> None:
        size = len(result.rows)
        if size > self.max_rows:
            return
        with self._lock:
            if key in self._answers:
                return
            self._answers[key] = result
            self._rows += size
            while self._rows > self.max_rows:
                _, dropped = self._answers.popitem(last=False)
                self._rows -= len(dropped.rows)


@contextmanager
def _held(lock: threading.Lock) -> Iterator[None]:
    """`lock`, acquired already, released on the way out."""
    try:
        yield
    finally:
        lock.release()
