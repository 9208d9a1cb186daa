"""`service.core.query_answers`: each (query, epoch) is evaluated once while it is kept, the
least recently used answers go first, and only evaluations that succeed are kept."""

from __future__ import annotations

import threading
import time

import pytest

from reasoner import QueryResult, QueryTimeout
from reasoner.values.types import NUMBER
from service.api.paging import page_of_sorted
from service.core.query_answers import QueryAnswers


def _result(rows: int) -> QueryResult:
    return QueryResult(("x",), (NUMBER,), [(i,) for i in range(rows)], 0.5)


def _later() -> float:
    return time.monotonic() + 10


def test_an_answer_is_evaluated_once_per_query_and_epoch() -> None:
    answers = QueryAnswers(100)
    calls: list[str] = []

    def evaluate() -> QueryResult:
        calls.append("x")
        return _result(3)

    first, kept = answers.answer(("q(x)", 1), evaluate, _later())
    assert not kept
    again, kept = answers.answer(("q(x)", 1), evaluate, _later())
    assert kept and again is first
    answers.answer(("q(x)", 2), evaluate, _later())  # another epoch is another answer
    answers.answer(("q(y)", 1), evaluate, _later())
    assert len(calls) == 3


def test_the_least_recently_used_answers_go_first() -> None:
    answers = QueryAnswers(10)
    for key in ("a", "b", "c"):
        answers.answer((key, 1), lambda: _result(4), _later())  # a and b fit; c drops a
    _, kept = answers.answer(("b", 1), lambda: _result(4), _later())
    assert kept
    _, kept = answers.answer(("a", 1), lambda: _result(4), _later())
    assert not kept  # dropped, evaluated again (and c, least recently used, goes)
    _, kept = answers.answer(("c", 1), lambda: _result(4), _later())
    assert not kept


def test_an_answer_larger_than_the_bound_is_never_kept() -> None:
    answers = QueryAnswers(10)
    answers.answer(("big", 1), lambda: _result(11), _later())
    _, kept = answers.answer(("big", 1), lambda: _result(11), _later())
    assert not kept


def test_a_failed_evaluation_is_not_kept() -> None:
    answers = QueryAnswers(10)

    def fail() -> QueryResult:
        raise QueryTimeout(1.0)

    with pytest.raises(QueryTimeout):
        answers.answer(("q", 1), fail, _later())
    _, kept = answers.answer(("q", 1), lambda: _result(1), _later())
    assert not kept


def test_concurrent_requests_for_one_answer_evaluate_it_once() -> None:
    answers = QueryAnswers(100)
    started = threading.Event()
    release = threading.Event()
    calls = 0

    def slow() -> QueryResult:
        nonlocal calls
        calls += 1
        started.set()
        release.wait(10)
        return _result(2)

    results: list[tuple[QueryResult, bool]] = []
    first = threading.Thread(
        target=lambda: results.append(answers.answer(("q", 1), slow, _later()))
    )
    first.start()
    started.wait(10)
    second = threading.Thread(
        target=lambda: results.append(answers.answer(("q", 1), slow, _later()))
    )
    second.start()
    time.sleep(0.1)  # the second waits for the first's evaluation
    release.set()
    first.join(10)
    second.join(10)
    assert calls == 1
    assert sorted(kept for _, kept in results) == [False, True]


def test_waiting_for_another_evaluation_past_the_deadline_times_out() -> None:
    answers = QueryAnswers(100)
    started = threading.Event()
    release = threading.Event()

    def slow() -> QueryResult:
        started.set()
        release.wait(10)
        return _result(2)

    first = threading.Thread(target=lambda: answers.answer(("q", 1), slow, _later()))
    first.start()
    started.wait(10)
    with pytest.raises(QueryTimeout):
        answers.answer(("q", 1), slow, time.monotonic() + 0.05)
    release.set()
    first.join(10)


def test_pages_of_a_sorted_answer_are_found_by_bisection() -> None:
    rows = [(i, i % 3) for i in range(10)]
    pages, after = [], None
    while True:
        chunk, after = page_of_sorted(rows, after, 4)
        pages.append(chunk)
        if after is None:
            break
    assert pages == [rows[:4], rows[4:8], rows[8:]]
    assert page_of_sorted(rows, (3, 5), 2) == ([(4, 1), (5, 2)], (5, 2))
    assert page_of_sorted(rows, (9, 0), 2) == ([], None)
