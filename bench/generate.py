"""Input generators of the benchmark shapes, at any size.

    python -m bench.generate rmat --nodes 1024 --edges 10000 --out DIR [--seed S]
    python -m bench.generate uniform --nodes 1000 --edges 1010 --out DIR [--seed S]
    python -m bench.generate lubm --universities N [--departments D] --out DIR [--seed S]

Graphs (`DIR/edge.facts`, `edge(x: number, y: number)`, ids from 1, distinct edges, the format
of ../shared/bench/graph*):
- R-MAT (Chakrabarti, Zhan, Faloutsos 2004) with GTgraph's default `rmat` profile parameters
  a=0.45, b=0.15, c=0.15, d=0.25; the node count is rounded up to a power of two, `edges`
  edges are drawn and duplicates dropped (as ../shared/bench/graph10000-rmat1k was made);
- uniform: `edges` distinct edges drawn uniformly among `nodes` nodes, no self-loops
  (GTgraph's `random` profile, the shape of graph1000-rand1k).

LUBM-like data (Guo, Pan, Heflin 2005; the generator UBA 1.7's schema and ranges): N universities
(`http://www.University{u}.edu`), each with 15-25 departments (or exactly `--departments`), each
department with 7-10 full, 10-14 associate, 8-11 assistant professors and 5-7 lecturers; 8-14
undergraduates and 3-4 graduate students per faculty member; every faculty member teaches 1-2
courses and 1-2 graduate courses; undergraduates take 2-4 courses, graduate students 1-3
graduate courses; 1 in 5 undergraduates has a professor as advisor, every graduate student has
one; 1 in 4-5 graduate students is a teaching assistant of a course, 1 in 3-4 a research
assistant; 10-20 research groups per department; publications: 15-20 per full, 10-18 per
associate, 5-10 per assistant professor, 0-5 per lecturer, and each graduate student co-authors
0-5 of their department's; degrees from universities drawn among 1000; full professor 0 heads
the department. IRIs, literals and property names are UBA's (`.../Department{d}.University{u}.edu
/FullProfessor{i}`, `name`, `emailAddress`, `telephone` "xxx-xxx-xxxx", `researchInterest`).
Written twice, in the formats of ../shared/bench:
- `DIR/triples/triple.facts`: `triple(s, p, o)` with the univ-bench TBox (`univ-bench-tbox
  .facts`, the TBox rows of ../shared/bench/lubm1) first, as for lubm1's `program.dl`/`rdfs_s.dl`;
- `DIR/owl2rl/<Relation>.facts`: one file per class (`s`) and property (`s<TAB>o`), without
  `name`, `researchInterest` and the TBox, as for lubm1-owl2rl's program.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parent
UB = "http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#"
RDF_TYPE = "rdf:type"

# ---------------------------------------------------------------- graphs

RMAT_PROBABILITIES = (0.45, 0.15, 0.15, 0.25)


def rmat_edges(nodes: int, edges: int, seed: int = 0) -> list[tuple[int, int]]:
    """`edges` R-MAT draws over 2^ceil(log2 nodes) nodes, distinct, in first-drawn order."""
    rng = random.Random(seed)
    levels = max(1, (max(nodes, 2) - 1).bit_length())
    a, b, c, _ = RMAT_PROBABILITIES
    seen: dict[tuple[int, int], None] = {}
    for _ in range(edges):
        x = y = 0
        for _level in range(levels):
            r = rng.random()
            x, y = x * 2, y * 2
            if r < a:
                pass
            elif r < a + b:
                y += 1
            elif r < a + b + c:
                x += 1
            else:
                x, y = x + 1, y + 1
        seen.setdefault((x + 1, y + 1), None)
    return list(seen)


def uniform_edges(nodes: int, edges: int, seed: int = 0) -> list[tuple[int, int]]:
    """`edges` distinct edges between distinct random nodes of 1..nodes."""
    if nodes < 2 or edges > nodes * (nodes - 1):
        raise ValueError(f"cannot draw {edges} distinct edges among {nodes} nodes")
    rng = random.Random(seed)
    seen: dict[tuple[int, int], None] = {}
    while len(seen) < edges:
        x, y = rng.randint(1, nodes), rng.randint(1, nodes)
        if x != y:
            seen.setdefault((x, y), None)
    return list(seen)


def write_edges(edges: list[tuple[int, int]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "edge.facts").write_text("".join(f"{x}\t{y}\n" for x, y in edges), encoding="utf-8")


# ---------------------------------------------------------------- CRDT


def crdt_prefix(source: Path, out: Path, inserts: int) -> None:
    """The first `inserts` insertions of the CRDT trace (whose parents are kept) and the
    removals of those elements: a small input of the same shape."""
    kept: set[tuple[str, str]] = {("0", "0")}
    insert_lines = []
    for line in (source / "insert_input.facts").read_text(encoding="utf-8").splitlines():
        if len(insert_lines) >= inserts:
            break
        ctr, node, pctr, pnode = line.split("\t")
        if (pctr, pnode) in kept:
            kept.add((ctr, node))
            insert_lines.append(line)
    remove_lines = [
        line
        for line in (source / "remove_input.facts").read_text(encoding="utf-8").splitlines()
        if tuple(line.split("\t")) in kept
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "insert_input.facts").write_text("".join(f"{x}\n" for x in insert_lines))
    (out / "remove_input.facts").write_text("".join(f"{x}\n" for x in remove_lines))


# ---------------------------------------------------------------- LUBM (UBA)

UNIVERSITY_POOL = 1000
DEPARTMENTS = (15, 25)
FACULTY = {
    "FullProfessor": (7, 10),
    "AssociateProfessor": (10, 14),
    "AssistantProfessor": (8, 11),
    "Lecturer": (5, 7),
}
PUBLICATIONS = {
    "FullProfessor": (15, 20),
    "AssociateProfessor": (10, 18),
    "AssistantProfessor": (5, 10),
    "Lecturer": (0, 5),
}
UNDERGRADUATES_PER_FACULTY = (8, 14)
GRADUATES_PER_FACULTY = (3, 4)
COURSES_PER_FACULTY = (1, 2)
GRADUATE_COURSES_PER_FACULTY = (1, 2)
UNDERGRADUATE_COURSES = (2, 4)
GRADUATE_COURSES = (1, 3)
RESEARCH_GROUPS = (10, 20)
UNDERGRADUATES_PER_ADVISEE = 5
GRADUATES_PER_TA = (4, 5)
GRADUATES_PER_RA = (3, 4)
GRADUATE_PUBLICATIONS = (0, 5)
RESEARCH_INTERESTS = 30

Triple = tuple[str, str, str]


def _university(u: int) -> str:
    return f"http://www.University{u}.edu"


def lubm_abox(universities: int, departments: int | None = None, seed: int = 0) -> Iterator[Triple]:
    """The ABox triples of `universities` universities (distinct, UBA's order per department)."""
    rng = random.Random(seed)
    span = rng.randint
    emitted_universities: set[int] = set()

    def university_typed(u: int) -> Iterator[Triple]:
        if u not in emitted_universities:
            emitted_universities.add(u)
            yield (_university(u), RDF_TYPE, UB + "University")

    for u in range(universities):
        yield from university_typed(u)
        yield (_university(u), UB + "name", f"University{u}")
        for d in range(departments if departments is not None else span(*DEPARTMENTS)):
            yield from _department(u, d, rng, university_typed)


def _department(u: int, d: int, rng: random.Random, university_typed) -> Iterator[Triple]:  # type: ignore[no-untyped-def]
    span = rng.randint
    dept = f"http://www.Department{d}.University{u}.edu"
    domain = f"Department{d}.University{u}.edu"
    yield (dept, RDF_TYPE, UB + "Department")
    yield (dept, UB + "name", f"Department{d}")
    yield (dept, UB + "subOrganizationOf", _university(u))

    def person(kind: str, i: int) -> tuple[str, list[Triple]]:
        iri = f"{dept}/{kind}{i}"
        return iri, [
            (iri, RDF_TYPE, UB + kind),
            (iri, UB + "name", f"{kind}{i}"),
            (iri, UB + "emailAddress", f"{kind}{i}@{domain}"),
            (iri, UB + "telephone", "xxx-xxx-xxxx"),
        ]

    faculty: list[tuple[str, str]] = []
    for kind, (low, high) in FACULTY.items():
        faculty.extend((kind, f"{dept}/{kind}{i}") for i in range(span(low, high)))
    professors = [iri for kind, iri in faculty if kind != "Lecturer"]
    courses: list[str] = []
    graduate_courses: list[str] = []
    publications: list[str] = []
    counters = dict.fromkeys(FACULTY, 0)
    for kind, _iri in faculty:
        i = counters[kind]
        counters[kind] += 1
        iri, triples = person(kind, i)
        yield triples[0]
        yield triples[1]
        for _ in range(span(*COURSES_PER_FACULTY)):
            course = f"{dept}/Course{len(courses)}"
            courses.append(course)
            yield (iri, UB + "teacherOf", course)
        for _ in range(span(*GRADUATE_COURSES_PER_FACULTY)):
            course = f"{dept}/GraduateCourse{len(graduate_courses)}"
            graduate_courses.append(course)
            yield (iri, UB + "teacherOf", course)
        for degree in ("undergraduateDegreeFrom", "mastersDegreeFrom", "doctoralDegreeFrom"):
            from_u = rng.randrange(UNIVERSITY_POOL)
            yield (iri, UB + degree, _university(from_u))
            yield from university_typed(from_u)
        yield (iri, UB + "worksFor", dept)
        yield triples[2]
        yield triples[3]
        if kind != "Lecturer":
            yield (iri, UB + "researchInterest", f"Research{rng.randrange(RESEARCH_INTERESTS)}")
        if kind == "FullProfessor" and i == 0:
            yield (iri, UB + "headOf", dept)
        for j in range(span(*PUBLICATIONS[kind])):
            publication = f"{iri}/Publication{j}"
            publications.append(publication)
            yield (publication, RDF_TYPE, UB + "Publication")
            yield (publication, UB + "name", f"Publication{j}")
            yield (publication, UB + "publicationAuthor", iri)
    for course in courses:
        yield (course, RDF_TYPE, UB + "Course")
        yield (course, UB + "name", course.rsplit("/", 1)[1])
    for course in graduate_courses:
        yield (course, RDF_TYPE, UB + "GraduateCourse")
        yield (course, UB + "name", course.rsplit("/", 1)[1])
    size = len(faculty)
    undergraduates = sum(span(*UNDERGRADUATES_PER_FACULTY) for _ in range(size))
    for i in range(undergraduates):
        iri, triples = person("UndergraduateStudent", i)
        yield from triples[:2]
        yield (iri, UB + "memberOf", dept)
        yield from triples[2:]
        for course in rng.sample(courses, min(len(courses), span(*UNDERGRADUATE_COURSES))):
            yield (iri, UB + "takesCourse", course)
        if professors and rng.randrange(UNDERGRADUATES_PER_ADVISEE) == 0:
            yield (iri, UB + "advisor", rng.choice(professors))
    graduates = sum(span(*GRADUATES_PER_FACULTY) for _ in range(size))
    ta_every, ra_every = span(*GRADUATES_PER_TA), span(*GRADUATES_PER_RA)
    for i in range(graduates):
        iri, triples = person("GraduateStudent", i)
        yield from triples[:2]
        yield (iri, UB + "memberOf", dept)
        yield from triples[2:]
        for course in rng.sample(
            graduate_courses, min(len(graduate_courses), span(*GRADUATE_COURSES))
        ):
            yield (iri, UB + "takesCourse", course)
        from_u = rng.randrange(UNIVERSITY_POOL)
        yield (iri, UB + "undergraduateDegreeFrom", _university(from_u))
        yield from university_typed(from_u)
        if professors:
            yield (iri, UB + "advisor", rng.choice(professors))
        if courses and i % ta_every == 0:
            yield (iri, RDF_TYPE, UB + "TeachingAssistant")
            yield (iri, UB + "teachingAssistantOf", rng.choice(courses))
        if i % ra_every == 1 % ra_every:
            yield (iri, RDF_TYPE, UB + "ResearchAssistant")
        for publication in rng.sample(
            publications, min(len(publications), span(*GRADUATE_PUBLICATIONS))
        ):
            yield (publication, UB + "publicationAuthor", iri)
    for g in range(span(*RESEARCH_GROUPS)):
        group = f"{dept}/ResearchGroup{g}"
        yield (group, RDF_TYPE, UB + "ResearchGroup")
        yield (group, UB + "subOrganizationOf", dept)


OWL2RL_INPUTS = (
    "AssistantProfessor",
    "AssociateProfessor",
    "Course",
    "Department",
    "FullProfessor",
    "GraduateCourse",
    "GraduateStudent",
    "Lecturer",
    "Publication",
    "ResearchAssistant",
    "ResearchGroup",
    "TeachingAssistant",
    "UndergraduateStudent",
    "University",
    "advisor",
    "doctoralDegreeFrom",
    "emailAddress",
    "headOf",
    "mastersDegreeFrom",
    "memberOf",
    "publicationAuthor",
    "subOrganizationOf",
    "takesCourse",
    "teacherOf",
    "teachingAssistantOf",
    "telephone",
    "undergraduateDegreeFrom",
    "worksFor",
)
OWL2RL_DROPPED = ("name", "researchInterest")


def write_lubm(out: Path, universities: int, departments: int | None = None, seed: int = 0) -> int:
    """Write `out/triples/triple.facts` and `out/owl2rl/*.facts`; return the ABox size."""
    abox = list(dict.fromkeys(lubm_abox(universities, departments, seed)))
    tbox = (DATA / "univ-bench-tbox.facts").read_text(encoding="utf-8")
    (out / "triples").mkdir(parents=True, exist_ok=True)
    with open(out / "triples" / "triple.facts", "w", encoding="utf-8") as handle:
        handle.write(tbox)
        handle.writelines(f"{s}\t{p}\t{o}\n" for s, p, o in abox)
    split: dict[str, list[str]] = {name: [] for name in OWL2RL_INPUTS}
    for s, p, o in abox:
        if p == RDF_TYPE:
            split[o.removeprefix(UB)].append(f"{s}\n")
        elif p.removeprefix(UB) not in OWL2RL_DROPPED:
            split[p.removeprefix(UB)].append(f"{s}\t{o}\n")
    (out / "owl2rl").mkdir(parents=True, exist_ok=True)
    for name, lines in split.items():
        (out / "owl2rl" / f"{name}.facts").write_text("".join(lines), encoding="utf-8")
    return len(abox)


def write_lubm_triples(
    path: Path, universities: int, departments: int | None = None, seed: int = 0
) -> int:
    """`write_lubm`'s `triple.facts` alone, streamed to `path` (the TBox, then the ABox, which
    `lubm_abox` yields distinct): a hundred universities without holding them in memory.
    Returns the number of lines."""
    tbox = (DATA / "univ-bench-tbox.facts").read_text(encoding="utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = tbox.count("\n")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(tbox)
        for s, p, o in lubm_abox(universities, departments, seed):
            handle.write(f"{s}\t{p}\t{o}\n")
            lines += 1
    return lines


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__)
    kinds = parser.add_subparsers(dest="kind", required=True)
    for kind in ("rmat", "uniform"):
        graph = kinds.add_parser(kind, help=f"{kind} random graph -> OUT/edge.facts")
        graph.add_argument("--nodes", type=int, required=True)
        graph.add_argument("--edges", type=int, required=True)
        graph.add_argument("--seed", type=int, default=0)
        graph.add_argument("--out", type=Path, required=True)
    lubm = kinds.add_parser("lubm", help="LUBM-like universities -> OUT/triples, OUT/owl2rl")
    lubm.add_argument("--universities", type=int, required=True)
    lubm.add_argument("--departments", type=int, help="per university (default: UBA's 15-25)")
    lubm.add_argument("--seed", type=int, default=0)
    lubm.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.kind == "lubm":
        count = write_lubm(args.out, args.universities, args.departments, args.seed)
        print(f"{args.out}: {count} ABox triples", file=sys.stderr)
        return 0
    make = rmat_edges if args.kind == "rmat" else uniform_edges
    edges = make(args.nodes, args.edges, args.seed)
    write_edges(edges, args.out)
    print(f"{args.out}/edge.facts: {len(edges)} distinct edges", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
