"""Soufflé programs through the service: named types and pragmas, as `reasoner run` reads them.

Types declared in one text are used by rules added later (the program is analyzed whole), a
type error in added rules answers its code and position and changes nothing, and a restart
reads the stored program with its types again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.service.conftest import Server
from tests.service.helpers import assert_problem, column_types, query_all, read_relation

TEXT = {"content-type": "text/plain"}
GOLDEN_DIRECTORY = REPO_ROOT / "tests" / "golden"
PROGRAM = """.pragma "jobs" "4"
.type Person = symbol
.type Age <: number
.number_type Year
.decl person(name: Person, age: Age)
.decl born(name: Person, year: Year)
born(n, 2026 - a) :- person(n, a).
"""


def test_named_types_and_pragmas(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        response = client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        assert [w["code"] for w in response.json()["warnings"]] == ["ignored_pragma"]
        client.post(
            "/v1/facts", json={"facts": {"person": [["ann", 42], ["bob", 7]]}}
        ).raise_for_status()
        added = ".decl older(name: Person, age: Age)\nolder(n, a) :- person(n, a), a > 18.\n"
        client.post("/v1/rules", content=added, headers=TEXT).raise_for_status()
        assert column_types(client, "born") == ["symbol", "number"]
        assert set(read_relation(client, "older")) == {("ann", 42)}

        epoch = client.get("/ready").json()["epoch"]
        conflict = "same(n) :- person(n, a), born(n, a).\n"
        body = assert_problem(
            client.post("/v1/rules", content=conflict, headers=TEXT), 400, "type_mismatch"
        )
        assert (body["line"], body["column"]) == (1, 34)
        unknown = ".decl later(name: Person, when: Date)\n"
        body = assert_problem(
            client.post("/v1/rules", content=unknown, headers=TEXT), 400, "unknown_type"
        )
        assert (body["line"], body["column"]) == (1, 33)
        pragma = '.pragma "fact-dir" "/data"\n'
        assert_problem(
            client.post("/v1/rules", content=pragma, headers=TEXT), 400, "unsupported_pragma"
        )
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "born")) == {("ann", 1984), ("bob", 2019)}
        assert set(read_relation(client, "older")) == {("ann", 42)}


def test_variables_local_to_a_negation_and_their_hidden_relation(
    make_server: Callable[..., Server],
) -> None:
    """`!s(p, p, y)` through the service: the answer, and the auxiliary relation that the
    analysis makes for it is neither listed, nor readable, nor writable."""
    server = make_server().start()
    program = ".decl e(x: number)\n.decl s(a: number, b: number, c: number)\n"
    program += "free(y) :- e(y), !s(p, p, y).\n"
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"e": [[1], [2]], "s": [[5, 5, 1], [5, 6, 2]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "free")) == {(2,)}
        names = [r["name"] for r in client.get("/v1/relations").json()["relations"]]
        assert sorted(names) == ["e", "free", "s"]
        hidden = "s!(p0,p0,$)"
        assert_problem(client.get(f"/v1/relations/{hidden}"), 404, "unknown_relation")
        body = {"facts": {hidden: [[1]]}}
        assert_problem(client.post("/v1/facts", json=body), 400, "unknown_relation")
        changed = client.request(
            "DELETE", "/v1/facts?changes=true", json={"facts": {"s": [[5, 5, 1]]}}
        ).raise_for_status()
        assert set(changed.json()["changes"]) == {"free"}


def test_aggregates_and_their_hidden_relations(make_server: Callable[..., Server]) -> None:
    """`count`, `sum`, `min` through the service: answers after writes and a restart, the
    changes a write reports (the relations the analysis makes are not among them, nor
    listed), and a refused aggregate answers its code and position and changes nothing."""
    server = make_server().start()
    program = """.decl node(x: number)
.decl edge(x: number, y: number)
degree(x, c) :- node(x), c = count : { edge(x, _) }.
weight(s) :- s = sum y : { edge(_, y) }.
lightest(x, m) :- node(x), m = min y : edge(x, y).
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"node": [[1], [2]], "edge": [[1, 5], [1, 7], [2, 7]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "degree")) == {(1, 2), (2, 1)}
        assert set(read_relation(client, "weight")) == {(19,)}
        assert set(read_relation(client, "lightest")) == {(1, 5), (2, 7)}
        names = [r["name"] for r in client.get("/v1/relations").json()["relations"]]
        assert sorted(names) == ["degree", "edge", "lightest", "node", "weight"]
        changed = client.request(
            "DELETE", "/v1/facts?changes=true", json={"facts": {"edge": [[2, 7]]}}
        ).raise_for_status()
        assert changed.json()["strategy"] == "update"
        assert changed.json()["changes"] == {
            "degree": {"inserted": [[2, 0]], "retracted": [[2, 1]]},
            "weight": {"inserted": [[12]], "retracted": [[19]]},
            "lightest": {"inserted": [], "retracted": [[2, 7]]},
        }

        epoch = client.get("/ready").json()["epoch"]
        mean = "average(m) :- m = mean y : { edge(_, y) }.\n"  # of numbers: Soufflé refuses it
        body = assert_problem(
            client.post("/v1/rules", content=mean, headers=TEXT), 400, "type_mismatch"
        )
        assert (body["line"], body["column"]) == (1, 19)
        assert "`mean` takes a float" in body["detail"]
        cycle = "loop(x, c) :- node(x), c = count : { loop(x, _) }.\n"
        body = assert_problem(
            client.post("/v1/rules", content=cycle, headers=TEXT), 400, "cyclic_aggregation"
        )
        assert (body["line"], body["column"]) == (1, 28)
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "degree")) == {(1, 2), (2, 0)}
        assert set(read_relation(client, "weight")) == {(12,)}


def test_components_through_the_service(make_server: Callable[..., Server]) -> None:
    """A program with components: instances' relations are listed and read by their
    qualified names, a rule of a component is one rule (its removal reaches every instance),
    and added text instantiates a component of the program."""
    server = make_server().start()
    program = """.comp Graph<N> {
    .decl edge(u: N, v: N)
    .decl reach(u: N, v: N)
    reach(x, y) :- edge(x, y).
    reach(x, z) :- reach(x, y), edge(y, z).
}
.init g = Graph<number>
.init s = Graph<symbol>
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"g.edge": [[1, 2], [2, 3]], "s.edge": [["a", "b"], ["b", "c"]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "g.reach")) == {(1, 2), (2, 3), (1, 3)}
        assert set(read_relation(client, "s.reach")) == {("a", "b"), ("b", "c"), ("a", "c")}
        names = [r["name"] for r in client.get("/v1/relations").json()["relations"]]
        assert sorted(names) == ["g.edge", "g.reach", "s.edge", "s.reach"]
        rules = client.get("/v1/rules").json()["rules"]
        (step,) = [r["id"] for r in rules if r["text"].startswith("reach(x, z)")]
        client.delete(f"/v1/rules/{step}").raise_for_status()
        assert set(read_relation(client, "g.reach")) == {(1, 2), (2, 3)}
        assert set(read_relation(client, "s.reach")) == {("a", "b"), ("b", "c")}
        added = client.post(
            "/v1/rules", content=".init h = Graph<number>\nh.edge(7, 8).\n", headers=TEXT
        ).raise_for_status()
        assert added.json()["ids"] == []
        assert set(read_relation(client, "h.reach")) == {(7, 8)}
        unknown = ".init k = Tree<number>\n"
        body = assert_problem(
            client.post("/v1/rules", content=unknown, headers=TEXT), 400, "parse_error"
        )
        assert (body["line"], body["column"]) == (1, 11)

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "h.reach")) == {(7, 8)}
        assert set(read_relation(client, "s.reach")) == {("a", "b"), ("b", "c")}


def test_string_functors_through_the_service(make_server: Callable[..., Server]) -> None:
    """Rules with `cat`, `strlen`, `substr`, `contains`, `match`, `to_number`, `range`: answers
    after writes, an Update that retracts what a functor made, queries that call functors without
    adding symbols, a refused call answering its code and position, and a restart that reads
    the symbols functors made."""
    server = make_server().start()
    program = """.decl user(name: symbol, id: number)
handle(cat("@", n, to_string(i))) :- user(n, i).
short(n, strlen(n)) :- user(n, _), strlen(n) < 4.
initial(n, substr(n, 0, 1)) :- user(n, _), !contains(" ", n).
numeric(n, to_number(n)) :- user(n, _), match("[0-9]+", n).
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"user": [["ann", 1], ["bo b", 2], ["42", 3]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "handle")) == {("@ann1",), ("@bo b2",), ("@423",)}
        assert set(read_relation(client, "short")) == {("ann", 3), ("42", 2)}
        assert set(read_relation(client, "initial")) == {("ann", "a"), ("42", "4")}
        assert set(read_relation(client, "numeric")) == {("42", 42)}
        changed = client.request(
            "DELETE", "/v1/facts?changes=true", json={"facts": {"user": [["ann", 1]]}}
        ).raise_for_status()
        assert changed.json()["strategy"] == "update"
        assert changed.json()["changes"]["handle"] == {"inserted": [], "retracted": [["@ann1"]]}
        _, rows = query_all(client, 'handle(h), t = cat(h, "!"), strlen(t) > 5')
        assert set(rows) == {("@bo b2", "@bo b2!")}
        ranged = "slot(i, k) :- user(_, i), k = range(0, i).\n"
        client.post("/v1/rules", content=ranged, headers=TEXT).raise_for_status()
        slots = {(2, 0), (2, 1), (3, 0), (3, 1), (3, 2)}
        assert set(read_relation(client, "slot")) == slots
        _, rows = query_all(client, "slot(i, k), k = range(1, 9, 2)")
        assert set(rows) == {(2, 1), (3, 1)}

        epoch = client.get("/ready").json()["epoch"]
        wrong = "bad(n) :- user(n, i), x = strlen(i).\n"
        body = assert_problem(
            client.post("/v1/rules", content=wrong, headers=TEXT), 400, "type_mismatch"
        )
        assert (body["line"], body["column"]) == (1, 34)
        unknown = "bad(x) :- user(n, _), x = concat(n, n).\n"
        body = assert_problem(
            client.post("/v1/rules", content=unknown, headers=TEXT), 400, "parse_error"
        )
        assert (body["line"], body["column"]) == (1, 27)
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "handle")) == {("@bo b2",), ("@423",)}
        assert set(read_relation(client, "initial")) == {("42", "4")}
        assert set(read_relation(client, "slot")) == {(2, 0), (2, 1), (3, 0), (3, 1), (3, 2)}


def test_unsigned_through_the_service(make_server: Callable[..., Server]) -> None:
    """`unsigned` columns take 0 .. 2^64 - 1 in JSON, TSV and CSV and answer them back (pages,
    filters, CSV, queries); a value outside is refused with its code and changes nothing; a
    restart reads them back from the store."""
    top, half = 2**64 - 1, 2**63
    server = make_server().start()
    program = """.decl big(x: unsigned)
.decl gap(x: unsigned, y: unsigned, d: unsigned)
gap(x, y, x - y) :- big(x), big(y), x < y.
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"big": [[1], [top]]}}).raise_for_status()
        tsv = {"content-type": "text/tab-separated-values"}
        body = f"{half}\n"
        client.post("/v1/relations/big/facts", content=body, headers=tsv).raise_for_status()
        assert column_types(client, "gap") == ["unsigned", "unsigned", "unsigned"]
        gaps = {(1, top, 2), (1, half, half + 1), (half, top, half + 1)}
        assert set(read_relation(client, "gap")) == gaps
        assert set(read_relation(client, "gap", fmt="csv")) == gaps
        assert read_relation(client, "big", limit=1) == [(1,), (half,), (top,)]  # as naturals
        assert set(read_relation(client, "gap", y=str(top))) == {(1, top, 2), (half, top, half + 1)}
        _, rows = query_all(client, "big(x), x > 1, y = x / 2")
        assert set(rows) == {(half, half // 2), (top, half - 1)}

        epoch = client.get("/ready").json()["epoch"]
        for bad in (-1, 2**64):
            refused = client.post("/v1/facts", json={"facts": {"big": [[bad]]}})
            assert_problem(refused, 400, "type_mismatch")
        refused = client.post("/v1/relations/big/facts", content="-1\n", headers=tsv)
        assert refused.status_code == 400
        wrong = "bad(x) :- big(x), x < -1.\n"
        assert_problem(client.post("/v1/rules", content=wrong, headers=TEXT), 400, "type_mismatch")
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "gap")) == gaps
        assert set(read_relation(client, "big")) == {(1,), (half,), (top,)}


def test_records_through_the_service(make_server: Callable[..., Server]) -> None:
    """Records and algebraic data types are text in JSON, TSV and CSV, canonical once stored
    (`[1,a]` is `[1, a]`); pages, filters, queries and explain read them back; a value that
    is no record of the column's type is refused with its code and changes nothing; a restart
    reads them back from the store."""
    server = make_server().start()
    program = """.type Point = [x: number, name: symbol]
.type Shape = Dot {at: Point} | Blank {}
.decl p(a: Point)
.decl s(x: Shape)
.decl named(n: symbol, x: number)
named(n, x) :- p([x, n]).
s($Dot(a)) :- p(a).
s($Blank).
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"p": [["[1,a]"], ["[2, b c]"]]}})
        tsv = {"content-type": "text/tab-separated-values"}
        body = '[3, "x, y"]\n'
        client.post("/v1/relations/p/facts", content=body, headers=tsv).raise_for_status()
        csv = {"content-type": "text/csv"}
        client.post("/v1/relations/p/facts", content='"[4, d]"\n', headers=csv).raise_for_status()
        columns = client.get("/v1/relations").json()["relations"]
        shown = {r["name"]: r["columns"] for r in columns}["s"]
        assert shown == [{"name": "x", "type": "record", "record": "Shape"}]
        points = {("[1, a]",), ("[2, b c]",), ('[3, "x, y"]',), ("[4, d]",)}
        assert set(read_relation(client, "p", limit=1)) == points
        assert set(read_relation(client, "p", fmt="csv")) == points
        assert set(read_relation(client, "named")) == {("a", 1), ("b c", 2), ("x, y", 3), ("d", 4)}
        assert read_relation(client, "s", x="$Dot([2,b c])") == [("$Dot([2, b c])",)]
        assert read_relation(client, "s", x="$Dot([9, z])") == []
        _, rows = query_all(client, "s($Dot([x, _])), x > 2")
        assert set(rows) == {(3,), (4,)}
        explained = client.get("/v1/explain/s", params={"x": "$Dot([1, a])"}).json()
        assert explained["holds"] and explained["proof"]["nodes"][1]["row"] == ["[1, a]"]

        epoch = client.get("/ready").json()["epoch"]
        for bad in ("[1]", 5, "$Dot(1)"):
            refused = client.post("/v1/facts", json={"facts": {"p": [[bad]]}})
            assert_problem(refused, 400, "type_mismatch")
        refused = client.post("/v1/relations/p/facts", content="[x, y]\n", headers=tsv)
        body = assert_problem(refused, 400, "invalid_facts")
        assert body["line"] == 1
        assert "not a `Point` value" in body["detail"]
        assert_problem(client.get("/v1/relations/s", params={"x": "[1"}), 400, "type_mismatch")
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "p")) == points
        assert ("$Blank",) in set(read_relation(client, "s"))


def test_floats_through_the_service(make_server: Callable[..., Server]) -> None:
    """Floats are JSON numbers, and the values JSON has no number for (an infinity, a NaN)
    the text C's `strtod` reads (`"inf"`, `"-nan"`), which every request takes back;
    CSV answers write a float's exact text; 0.0 and -0.0 are two values (a relation holds
    bits), in filters, pages, queries, explain, the store and after a restart. A `sum`
    whose rounding depends on Soufflé's order of rows is refused and changes nothing."""
    server = make_server().start()
    program = """.decl p(x: float)
.decl half(x: float, h: float)
half(x, x / 2) :- p(x).
.decl total(s: float)
total(s) :- s = sum x : p(x).
.decl ratio(r: float)
ratio(1.0 / x) :- p(x), x = 0.0.
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"p": [[1.5], [-0.0], [0.0], ["inf"]]}})
        csv = {"content-type": "text/csv"}
        client.post("/v1/relations/p/facts", content="2.25\n", headers=csv).raise_for_status()
        columns = client.get("/v1/relations").json()["relations"]
        assert {r["name"]: r["columns"] for r in columns}["p"] == [
            {"name": "x", "type": "float", "record": None}
        ]
        assert read_relation(client, "p", limit=1) == [(-0.0,), (0.0,), (1.5,), (2.25,), ("inf",)]
        assert read_relation(client, "p", fmt="csv") == [
            ("-0",),
            ("0",),
            ("1.5",),
            ("2.25",),
            ("inf",),
        ]
        assert set(read_relation(client, "ratio")) == {("-inf",), ("inf",)}
        assert read_relation(client, "half", x="1.5") == [(1.5, 0.75)]
        assert read_relation(client, "half", x="-0") == [(-0.0, -0.0)]
        assert read_relation(client, "total") == [("inf",)]
        _, rows = query_all(client, "p(x), x > 1, y = x * 2")
        assert set(rows) == {(1.5, 3.0), (2.25, 4.5), ("inf", "inf")}
        explained = client.get("/v1/explain/half", params={"x": "inf", "h": "inf"}).json()
        assert explained["holds"] and explained["row"] == ["inf", "inf"]
        assert_problem(client.get("/v1/relations/p", params={"x": "1.5 "}), 400, "type_mismatch")

        epoch = client.get("/ready").json()["epoch"]
        refused = client.post("/v1/facts", json={"facts": {"p": [["x"]]}})
        assert_problem(refused, 400, "type_mismatch")
        retracted = client.request("DELETE", "/v1/facts", json={"facts": {"p": [["inf"]]}})
        retracted.raise_for_status()
        epoch = client.get("/ready").json()["epoch"]
        refused = client.post("/v1/facts", json={"facts": {"p": [[0.1], [0.2], [0.3]]}})
        assert_problem(refused, 400, "unsupported_feature")
        assert client.get("/ready").json()["epoch"] == epoch
        assert read_relation(client, "total") == [(3.75,)]

    server.stop()
    server.start()
    with server.client() as client:
        assert read_relation(client, "p") == [(-0.0,), (0.0,), (1.5,), (2.25,)]
        assert read_relation(client, "total") == [(3.75,)]


def test_match_is_souffles_regex_through_the_service(make_server: Callable[..., Server]) -> None:
    """`match` follows C++'s `std::regex_match` (ECMAScript): a POSIX bracket class matches,
    an invalid pattern makes `match` and `!match` both false, a pattern whose construct is
    not translated is refused by name at its position and changes nothing, and one met in
    the data refuses the write that meets it."""
    server = make_server().start()
    program = """.decl word(s: symbol)
.decl pair(p: symbol, s: symbol)
digits(s) :- word(s), match("[[:digit:]]+", s).
unmatched(s) :- word(s), !match("a{,2}", s).
matched(p, s) :- pair(p, s), match(p, s).
"""
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"word": [["123"], ["12a"], ["a"]], "pair": [["\\d+", "42"], ["(?i)a", "A"]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "digits")) == {("123",)}
        assert set(read_relation(client, "unmatched")) == set()
        assert set(read_relation(client, "matched")) == {("\\d+", "42")}

        epoch = client.get("/ready").json()["epoch"]
        collating = 'same(s) :- word(s), match("[[.a.]]", s).\n'
        body = assert_problem(
            client.post("/v1/rules", content=collating, headers=TEXT), 400, "unsupported_feature"
        )
        assert (body["line"], body["column"]) == (1, 27)
        assert "collating elements" in body["detail"]
        written = {"facts": {"pair": [["[[=a=]]", "a"]]}}
        assert_problem(client.post("/v1/facts", json=written), 400, "unsupported_feature")
        assert client.get("/ready").json()["epoch"] == epoch
        assert set(read_relation(client, "matched")) == {("\\d+", "42")}


def test_the_preprocessor_through_the_service(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """The program file's `#include`s are read beside it at start-up (the operator's files);
    a posted text is preprocessed too, but its `#include` names no file of the server, and
    an error points at the directive as sent."""
    (tmp_path / "lib.dl").write_text("#define LIMIT 3\n.decl edge(x: number, y: number)\n")
    program = tmp_path / "program.dl"
    program.write_text('#include "lib.dl"\nsmall(x) :- edge(x, _), x < LIMIT.\n')
    server = make_server(REASONER_PROGRAM=str(program)).start()
    with server.client() as client:
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2], [5, 6]]}}).raise_for_status()
        assert read_relation(client, "small") == [(1,)]
        added = "#define TWICE(x) ((x) * 2)\ndouble(TWICE(x)) :- small(x).\n"
        client.post("/v1/rules", content=added, headers=TEXT).raise_for_status()
        assert read_relation(client, "double") == [(2,)]
        again = client.post("/v1/rules", content=added, headers=TEXT).raise_for_status()
        assert again.json()["changed"] is False  # the same rule, once

        epoch = client.get("/ready").json()["epoch"]
        leak = '.decl x(s: symbol)\n#include "/etc/passwd"\n'
        body = assert_problem(
            client.post("/v1/rules", content=leak, headers=TEXT), 400, "preprocessor_error"
        )
        assert (body["line"], body["column"]) == (2, 1)
        assert "root:" not in json.dumps(body)
        wrong = '#define N 1\n\nbad(x) :- small(x), x < "s".\n'
        body = assert_problem(
            client.post("/v1/rules", content=wrong, headers=TEXT), 400, "type_mismatch"
        )
        assert body["line"] == 3
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    (tmp_path / "lib.dl").unlink()  # the store keeps the program whole
    server.start()
    with server.client() as client:
        assert read_relation(client, "double") == [(2,)]


def test_choice_domain_through_the_service(make_server: Callable[..., Server]) -> None:
    """A spanning tree by `choice-domain`: chosen at Bootstrap, chosen afresh when a write
    changes its input, the same after a restart; a key that names no attribute is refused
    at its place and changes nothing."""
    program = (
        ".decl edge(x: number, y: number)\n"
        ".decl tree(parent: number, node: number) choice-domain node\n"
        "tree(1, 1).\ntree(x, y) :- tree(_, x), edge(x, y).\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        edges = [[1, 3], [1, 2], [3, 4], [2, 4], [4, 5]]
        client.post("/v1/facts", json={"facts": {"edge": edges}}).raise_for_status()
        assert set(read_relation(client, "tree")) == {(1, 1), (1, 2), (1, 3), (2, 4), (4, 5)}
        client.post(
            "/v1/deltas", json={"facts": {"retract": {"edge": [[2, 4]]}}}
        ).raise_for_status()
        assert set(read_relation(client, "tree")) == {(1, 1), (1, 2), (1, 3), (3, 4), (4, 5)}

        epoch = client.get("/ready").json()["epoch"]
        bad = ".decl pick(x: number, y: number) choice-domain (x, z)\n"
        body = assert_problem(
            client.post("/v1/rules", content=bad, headers=TEXT), 400, "unknown_attribute"
        )
        assert (body["line"], body["column"]) == (1, 48)
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "tree")) == {(1, 1), (1, 2), (1, 3), (3, 4), (4, 5)}


def test_autoinc_through_the_service(make_server: Callable[..., Server]) -> None:
    """`autoinc()` numbers a relation's rows at Bootstrap, renumbers them when a write moves
    them, keeps its numbers across a restart; a second numbered rule (whose numbers would follow
    Soufflé's order of rules) is refused at its place and changes nothing."""
    program = (
        ".decl item(x: symbol)\n.decl id(x: symbol, n: number)\nid(x, autoinc()) :- item(x).\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        items = {"item": [["pear"], ["apple"], ["fig"]]}
        client.post("/v1/facts", json={"facts": items}).raise_for_status()
        assert set(read_relation(client, "id")) == {("pear", 0), ("apple", 1), ("fig", 2)}
        client.post(
            "/v1/deltas", json={"facts": {"retract": {"item": [["pear"]]}}}
        ).raise_for_status()
        assert set(read_relation(client, "id")) == {("apple", 0), ("fig", 1)}

        epoch = client.get("/ready").json()["epoch"]
        bad = ".decl seen(x: symbol, n: number)\nseen(x, autoinc()) :- item(x), id(x, _).\n"
        body = assert_problem(
            client.post("/v1/rules", content=bad, headers=TEXT), 400, "unsupported_feature"
        )
        assert (body["line"], body["column"]) == (2, 9)
        assert "more than one rule" in body["detail"]
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "id")) == {("apple", 0), ("fig", 1)}
        client.post("/v1/facts", json={"facts": {"item": [["pear"]]}}).raise_for_status()
        assert set(read_relation(client, "id")) == {("pear", 0), ("apple", 1), ("fig", 2)}


def test_subsumption_through_the_service(make_server: Callable[..., Server]) -> None:
    """Shortest distances by subsumption: at Bootstrap, afresh when a write changes the
    graph, the same after a restart; a subsumption between two relations is refused at its
    place and changes nothing."""
    program = (
        ".decl edge(x: number, y: number, w: number)\n.decl dist(n: number, d: number)\n"
        "dist(1, 0).\ndist(y, d + w) :- dist(x, d), edge(x, y, w).\n"
        "dist(x, d1) <= dist(x, d2) :- d2 < d1.\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        edges = [[1, 2, 5], [1, 3, 1], [3, 2, 1], [2, 4, 1], [4, 1, 1]]
        client.post("/v1/facts", json={"facts": {"edge": edges}}).raise_for_status()
        assert set(read_relation(client, "dist")) == {(1, 0), (2, 2), (3, 1), (4, 3)}
        retract = {"facts": {"retract": {"edge": [[3, 2, 1]]}}}
        client.post("/v1/deltas", json=retract).raise_for_status()
        assert set(read_relation(client, "dist")) == {(1, 0), (2, 5), (3, 1), (4, 6)}

        epoch = client.get("/ready").json()["epoch"]
        bad = ".decl other(n: number, d: number)\ndist(x, a) <= other(x, b) :- b < a.\n"
        body = assert_problem(
            client.post("/v1/rules", content=bad, headers=TEXT), 400, "parse_error"
        )
        assert (body["line"], body["column"]) == (2, 15)
        assert client.get("/ready").json()["epoch"] == epoch

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "dist")) == {(1, 0), (2, 5), (3, 1), (4, 6)}


def test_inline_through_the_service(make_server: Callable[..., Server]) -> None:
    """An inline relation is substituted into its readers: they answer, it reads empty."""
    program = (
        ".decl e(x: number, y: number)\n.decl hop(x: number, z: number) inline\n"
        "hop(x, z) :- e(x, y), e(y, z).\n.decl far(x: number, y: number)\n"
        "far(x, y) :- hop(x, y).\nfar(x, z) :- far(x, y), hop(y, z).\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        edges = [[1, 2], [2, 3], [3, 4], [4, 5]]
        client.post("/v1/facts", json={"facts": {"e": edges}}).raise_for_status()
        assert set(read_relation(client, "far")) == {(1, 3), (2, 4), (3, 5), (1, 5)}
        assert read_relation(client, "hop") == []
        client.post("/v1/deltas", json={"facts": {"retract": {"e": [[2, 3]]}}}).raise_for_status()
        assert set(read_relation(client, "far")) == {(3, 5)}


def test_witnesses_and_untyped_records_through_the_service(
    make_server: Callable[..., Server],
) -> None:
    """A `min` with a witness and a comparison of untyped record literals, posted as rules:
    both follow writes, and a `count` with a witness is refused at its place."""
    program = (
        ".decl e(x: number, y: number)\n.decl lowest(x: number, m: number)\n"
        "lowest(x, m) :- m = min y : { e(x, y) }.\n.decl mirror(x: number, y: number)\n"
        "mirror(x, y) :- e(x, y), [x, y] = [y, x].\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        edges = [[1, 5], [2, 3], [3, 3], [4, 4]]
        client.post("/v1/facts", json={"facts": {"e": edges}}).raise_for_status()
        assert set(read_relation(client, "lowest")) == {(2, 3), (3, 3)}
        assert set(read_relation(client, "mirror")) == {(3, 3), (4, 4)}
        retract = {"retract": {"e": [[2, 3], [3, 3]]}}
        client.post("/v1/deltas", json={"facts": retract}).raise_for_status()
        assert set(read_relation(client, "lowest")) == {(4, 4)}
        assert set(read_relation(client, "mirror")) == {(4, 4)}
        counted = ".decl c(x: number, n: number)\nc(x, n) :- n = count : { e(x, _) }.\n"
        body = assert_problem(
            client.post("/v1/rules", content=counted, headers=TEXT), 400, "unsafe_rule"
        )
        assert (body["line"], body["column"]) == (2, 28)
    server.stop()


def test_magic_sets_through_the_service(make_server: Callable[..., Server]) -> None:
    """`.pragma "magic-transform"`: the output asks `samegen` for one node's generation, which
    is all it computes, and follows writes; `samegen` itself is read with a query (answered
    goal-directed, its constants the seeds), not as a whole relation; after a restart the
    same."""
    program = (
        '.pragma "magic-transform" "*"\n'
        ".decl parent(x: number, p: number)\n.decl node(x: number)\n"
        ".decl samegen(x: number, y: number)\n"
        "samegen(x, x) :- node(x).\n"
        "samegen(x, y) :- parent(x, a), samegen(a, b), parent(y, b).\n"
        ".decl cousins(y: number)\n.output cousins\ncousins(y) :- samegen(6, y).\n"
    )
    nodes = range(1, 16)
    facts = {"node": [[x] for x in nodes], "parent": [[x, x // 2] for x in nodes if x > 1]}
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert set(read_relation(client, "cousins")) == {(4,), (5,), (6,), (7,)}
        listed = {r["name"]: r for r in client.get("/v1/relations").json()["relations"]}
        assert listed["samegen"]["goal_directed"] and not listed["cousins"]["goal_directed"]
        assert_problem(client.get("/v1/relations/samegen"), 409, "goal_directed")
        assert_problem(client.get("/v1/explain/samegen?x=6&y=7"), 409, "goal_directed")
        assert query_all(client, "samegen(12, y)") == (["y"], [(y,) for y in range(8, 16)])
        assert query_all(client, "samegen(x, 3), x != 3") == (["x"], [(2,)])

        before = client.get("/ready").json()["epoch"]
        grown = {"node": [[16], [17]], "parent": [[16, 8], [17, 8]]}
        client.post("/v1/deltas", json={"facts": {"insert": grown}}).raise_for_status()
        assert query_all(client, "samegen(16, y)")[1] == [(16,), (17,)]
        assert set(read_relation(client, "cousins")) == {(4,), (5,), (6,), (7,)}
        # An earlier epoch: whole for an output, not known whole for what may be goal-directed.
        past = client.get(f"/v1/relations/cousins?epoch={before}").raise_for_status().json()
        assert len(past["rows"]) == 4
        asked = {"query": "samegen(6, y)", "epoch": before}
        assert_problem(client.post("/v1/query", json=asked), 410, "epoch_unavailable")

    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "cousins")) == {(4,), (5,), (6,), (7,)}
        assert query_all(client, "samegen(17, y)")[1] == [(16,), (17,)]


FUNCTORS = GOLDEN_DIRECTORY / "user_functors"


def test_user_defined_functors_are_the_servers(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """A posted program calls the functors the server was started with (`REASONER_FUNCTORS`),
    with Soufflé's rows; it never names a library, nor declares a functor the server lacks. A
    functor that raises refuses its write (422 `functor_error`) and nothing changes; queries
    call functors too; a restart binds the stored program to them again."""
    module = tmp_path / "functors.py"
    module.write_text(
        (FUNCTORS / "functors.py").read_text()
        + "\n\ndef parse(s: str) -> int:\n    return int(s)\n"
    )
    server = make_server(REASONER_FUNCTORS=str(module)).start()
    program = (FUNCTORS / "program.dl").read_text()
    parse = ".functor parse(s: symbol): number\n.decl t(s: symbol)\nn(@parse(s)) :- t(s).\n"
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        for csv_file in sorted(FUNCTORS.glob("*.csv")):
            with csv_file.open(encoding="utf-8") as rows:
                expected = {tuple(line.rstrip("\n").split("\t")) for line in rows}
            served = read_relation(client, csv_file.stem, fmt="csv")
            assert {tuple(map(str, row)) for row in served} == expected, csv_file.stem
        client.post("/v1/rules", content=parse, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"t": [["12"]]}}).raise_for_status()

        epoch = client.get("/ready").json()["epoch"]
        body = assert_problem(
            client.post("/v1/facts", json={"facts": {"t": [["x"]]}}), 422, "functor_error"
        )
        assert '`@parse("x")` raised ValueError' in body["detail"]
        missing = ".functor secret(x: number): number\n"
        body = assert_problem(
            client.post("/v1/rules", content=missing, headers=TEXT), 400, "unknown_functor"
        )
        assert (body["line"], body["column"]) == (1, 1)
        library = '.pragma "libraries" "functors"\n.pragma "library-dir" "/tmp"\n'
        assert_problem(
            client.post("/v1/rules", content=library, headers=TEXT), 400, "unsupported_pragma"
        )
        assert client.get("/ready").json()["epoch"] == epoch
        assert read_relation(client, "n") == [(12,)]
        assert query_all(client, 'n(x), y = x + @parse("7")') == (["x", "y"], [(12, 19)])
        failing = client.post("/v1/query", json={"query": 'n(x), y = @parse("z")'})
        assert_problem(failing, 422, "functor_error")

    server.stop()
    server.start()
    with server.client() as client:
        assert read_relation(client, "n") == [(12,)]
        assert set(read_relation(client, "counted")) == {(n,) for n in range(6)}
