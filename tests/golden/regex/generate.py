"""Write `table.json`: Soufflé's own answers to `match(pattern, subject)` and
`!match(pattern, subject)` for the cases below, the table
`tests/unit/values/test_ecmascript_regex.py`
checks the translator against (so that test never needs Soufflé).

Soufflé's `match` is C++ `std::regex_match` with the ECMAScript grammar of libstdc++ over the
UTF-8 bytes of the subject; an invalid pattern makes `match` and `!match` both false. This
script needs the Soufflé build (the 64-bit one, whose semantics the project follows); run by
hand from the repository root after changing CASES:

    .venv/bin/python tests/golden/regex/generate.py [path/to/souffle]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SOUFFLE = "/work/shared/tools/souffle64/bin/souffle"
TABLE = Path(__file__).with_name("table.json")

CASES: list[tuple[str, str]] = [
    # POSIX bracket classes (C locale, ASCII)
    ("[[:digit:]]+", "123"),
    ("[[:digit:]]+", "12a"),
    ("[[:digit:]]", "٣"),
    ("[[:alpha:]]+", "abcXYZ"),
    ("[[:alpha:]]", "é"),
    ("[[:alpha:]]+", "ab1"),
    ("[[:alnum:]_]+", "a_1"),
    ("[[:space:]]+", " \t\n\r"),
    ("[[:space:]]+", "\f\v"),
    ("[[:space:]]", "a"),
    ("[[:upper:]][[:lower:]]+", "Hello"),
    ("[[:upper:]]", "h"),
    ("[[:punct:]]+", "!-/:@[`{~"),
    ("[[:xdigit:]]+", "0aF9"),
    ("[[:xdigit:]]", "g"),
    ("[[:blank:]]+", " \t"),
    ("[[:blank:]]", "\n"),
    ("[[:cntrl:]]", "\t"),
    ("[[:print:]]+", "a b~"),
    ("[[:print:]]", "\t"),
    ("[[:graph:]]", " "),
    ("[[:graph:]]+", "a~!"),
    ("[[:w:]]+", "a_1"),
    ("[[:s:]]", " "),
    ("[[:d:]]", "5"),
    ("[^[:digit:]]+", "abc"),
    ("[^[:digit:]]", "1"),
    ("[[:digit:][:alpha:]]+", "a1b2"),
    ("[x[:digit:]]+", "x1"),
    ("[[:bogus:]]", "a"),
    ("[[:DIGIT:]]", "1"),
    ("[[:Alpha:]]", "a"),
    ("[[::]]", ":"),
    ("[[:digit]]", "1"),
    ("[[:digit:]", "1"),
    ("[:digit:]", ":"),
    ("[:digit:]", "d"),
    ("[[:digit:]-z]", "-"),
    ("[[.a.]]", "a"),
    ("[[=a=]]", "a"),
    # \d \w \s \b: ASCII only
    ("\\d+", "0123456789"),
    ("\\d", "٣"),
    ("\\D", "é"),
    ("\\D", "a"),
    ("\\w+", "az_AZ09"),
    ("\\w", "é"),
    ("\\W", "-"),
    ("\\W", "_"),
    ("\\s+", " \t\n\r"),
    ("\\s+", "\f\v"),
    ("\\s", "\u00a0"),
    ("\\S", "x"),
    ("a\\bb", "ab"),
    ("a\\b b", "a b"),
    ("a\\Bb", "ab"),
    (".*\\bé", "aé"),
    (".*\\b.*", "é"),
    ("[\\d]+", "42"),
    ("[\\w-]+", "a-b"),
    ("[\\D]", "a"),
    ("[\\D]", "1"),
    ("[\\S]", " "),
    ("[\\W]", "-"),
    ("[^\\d]", "a"),
    ("[\\b]", "\b"),
    ("[\\b]", "b"),
    # . excludes \n and \r only, and is one byte
    ("a.b", "a\nb"),
    ("a.b", "a\rb"),
    ("a.b", "a\tb"),
    ("a.b", "a\u2028b"),
    (".", "é"),
    ("..", "é"),
    ("a.c", "aéc"),
    ("a..c", "aéc"),
    ("...", "€"),
    (".{4}", "😀"),
    ("é", "é"),
    ("é+", "éé"),
    ("é+", "é\xa9"),
    ("[é]", "é"),
    ("[é]+", "é"),
    ("[é]{2}", "é"),
    ("[^é]", "a"),
    ("[^é]{2}", "é"),
    ("[à-é]{2}", "ä"),
    ("[a-é]", "b"),
    ("[é-a]", "b"),
    ("[é-a]{2}", "é"),
    ("[é-a]", "0"),
    ("[é-a]{2}", "ÿ"),
    ("[é-a]{2}", "è"),
    ("[--a]", "A"),
    ("[-]", "-"),
    ("[^-a]", "-"),
    ("[\\w-]", "-"),
    ("[[:digit:]-]", "-"),
    ("[a-c-e-g]", "f"),
    ("[a\\-z]", "b"),
    ("[\\B]", "B"),
    ("[\\c]]", "]"),
    ("[\\x41-\\u0143]", "B"),
    ("[\\x00-é]{2}", "ä"),
    # ^ and $: no multiline
    ("^abc$", "abc"),
    ("abc$", "abc\n"),
    ("abc\n", "abc\n"),
    ("^a", "a"),
    ("a^b", "ab"),
    ("a$b", "ab"),
    ("(^a|b)+", "ab"),
    ("a$\n", "a\n"),
    ("(a$)*", "a"),
    # whole-text matching and alternation
    ("a|ab", "ab"),
    ("ab|a", "ab"),
    ("a", "ab"),
    ("", ""),
    ("", "a"),
    ("a*", ""),
    ("(a|b)*c", "ababc"),
    # lazy quantifiers
    ("a+?", "aaa"),
    ("a*?b", "aab"),
    ("(a??)b", "ab"),
    ("a{1,2}?", "aa"),
    ("(a+?)(a*)", "aaa"),
    # possessive and atomic: Python only
    ("a*+", "aaa"),
    ("a++", "aaa"),
    ("a?+", "a"),
    ("(?>a)", "a"),
    # { quantifier syntax
    ("a{2}", "aa"),
    ("a{2,}", "aaaa"),
    ("a{2,3}", "aaaa"),
    ("a{,2}", "a"),
    ("a{,2}", "a{,2}"),
    ("a{", "a{"),
    ("a{x}", "a{x}"),
    ("a{1", "a{1"),
    ("a{1,2", "a{1,2"),
    ("a{}", "a{}"),
    ("{", "{"),
    ("}", "}"),
    ("a}", "a}"),
    ("x{2}{3}", "xxxxxx"),
    ("a{3,2}", "aa"),
    ("a{ 2}", "aa"),
    ("a{2 }", "aa"),
    ("a{02}", "aa"),
    ("a{0}", ""),
    ("a{1,1}b", "ab"),
    ("a**", "aa"),
    ("a*?*", "aa"),
    ("*a", "a"),
    ("+", "+"),
    ("?", "?"),
    ("a|*", "a"),
    ("(*a)", "a"),
    # empty class and any-character class
    ("[]", ""),
    ("[]a", "a"),
    ("a[]", "a"),
    ("[]a]", "a]"),
    ("[]a]", "]"),
    ("[^]", "a"),
    ("[^]", "\n"),
    ("[^]*", "a\nb"),
    ("[^]]", "a"),
    ("[^]]", "]"),
    ("[]]", "]"),
    ("[a]]", "a]"),
    ("[\\]]", "]"),
    ("]", "]"),
    # classes and ranges
    ("[a-z]+", "hello"),
    ("[z-a]", "b"),
    ("[a-]", "-"),
    ("[-a]", "-"),
    ("[a-c-e]", "-"),
    ("[a-c-e]", "d"),
    ("[\\d-z]", "-"),
    ("[\\d-z]", "5"),
    ("[a-\\d]", "-"),
    ("[%--]", "+"),
    ("[\\x41-\\x43]+", "ABC"),
    ("[\\n]", "\n"),
    ("[\\t]", "\t"),
    ("[\\-]", "-"),
    ("[\\^]", "^"),
    ("[\\[]", "["),
    ("[[]", "["),
    ("[a[]", "["),
    ("[^^]", "a"),
    ("[\\.]", "."),
    ("[.]", "a"),
    ("[\\q]", "q"),
    ("[\\c]", "c"),
    ("[\\cA]", "\x01"),
    ("[\\u0041]", "A"),
    ("[\\0]", "\x00"),
    ("[\\1]", "\x01"),
    ("[\\1]", "1"),
    ("[a-b-c]", "-"),
    # identity and other escapes
    ("\\q", "q"),
    ("\\a", "a"),
    ("\\a", "\x07"),
    ("\\A", "A"),
    ("\\Aa", "a"),
    ("a\\Z", "a"),
    ("a\\Z", "aZ"),
    ("a\\z", "az"),
    ("\\e", "e"),
    ("\\E", "E"),
    ("\\G", "G"),
    ("\\g", "g"),
    ("\\h", "h"),
    ("\\i", "i"),
    ("\\k", "k"),
    ("\\K", "K"),
    ("\\l", "l"),
    ("\\L", "L"),
    ("\\N", "N"),
    ("\\p", "p"),
    ("\\P", "P"),
    ("\\Q", "Q"),
    ("\\R", "R"),
    ("\\U", "U"),
    ("\\X", "X"),
    ("\\y", "y"),
    ("\\z", "z"),
    ("\\j", "j"),
    ("\\m", "m"),
    ("\\o", "o"),
    ("\\Y", "Y"),
    ("\\C", "C"),
    ("\\F", "F"),
    ("\\H", "H"),
    ("\\I", "I"),
    ("\\J", "J"),
    ("\\M", "M"),
    ("\\O", "O"),
    ("\\T", "T"),
    ("\\V", "V"),
    ("\\.", "."),
    ("\\.", "a"),
    ("\\*", "*"),
    ("\\-", "-"),
    ("\\/", "/"),
    ("\\ ", " "),
    ("\\:", ":"),
    ("\\é", "é"),
    ("\\\\", "\\"),
    ("\\", "\\"),
    ("a\\", "a"),
    ("\\n", "\n"),
    ("\\t", "\t"),
    ("\\r", "\r"),
    ("\\f", "\f"),
    ("\\v", "\v"),
    ("\\cA", "\x01"),
    ("\\cz", "\x1a"),
    ("\\cJ", "\n"),
    ("\\c1", "c1"),
    ("\\c1", "\\c1"),
    ("\\c", "c"),
    ("\\cA", "A"),
    ("\\c1", "1"),
    ("[\\cA]", "A"),
    ("\\c\\", "\\"),
    ("a{1,400}", "a"),
    ("a???", "a"),
    ("\\x41", "A"),
    ("\\x4", "x4"),
    ("\\xg1", "xg1"),
    ("\\xC3\\xA9", "é"),
    ("\\xe9", "é"),
    ("\\u0041", "A"),
    ("\\u00e9", "é"),
    ("\\u0141", "A"),
    ("\\u0141", "Ł"),
    ("\\u004", "u004"),
    ("\\u{41}", "A"),
    ("\\0", "\x00"),
    ("\\0", "0"),
    ("a\\00", "a\x000"),
    ("\\01", "\x001"),
    # backreferences
    ("(a)\\1", "aa"),
    ("(a)\\1", "a"),
    ("(a|b)\\1", "ab"),
    ("(a)?\\1b", "b"),
    ("(a)|\\1b", "b"),
    ("(a)?b\\1", "b"),
    ("\\1(a)", "a"),
    ("\\1(a)", "aa"),
    ("(a\\1)", "a"),
    ("\\1", ""),
    ("\\1", "\x01"),
    ("(a)\\2", "a"),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "abcdefghijj"),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "abcdefghija0"),
    ("(a)\\10", "aa0"),
    ("(?:(a)|b)+\\1", "aba"),
    ("(?:(a)|b)+\\1", "ab"),
    ("((a)|b)+\\2", "aba"),
    ("(a*)+b\\1", "aab"),
    # groups and assertions
    ("(?:ab)+", "abab"),
    ("(?=a)a", "a"),
    ("(?!b)a", "a"),
    ("(?!a)a", "a"),
    ("(?=.*b)a.*", "acb"),
    ("(?=a)*a", "a"),
    ("(?=a)+a", "a"),
    ("(?<=a)b", "b"),
    ("(?<!a)b", "b"),
    ("(?P<x>a)", "a"),
    ("(?P<x>a)(?P=x)", "aa"),
    ("(?<x>a)", "a"),
    ("(?<x>a)\\k<x>", "aa"),
    ("(?i)a", "A"),
    ("(?i:a)", "A"),
    ("(?s).", "\n"),
    ("(?#comment)a", "a"),
    ("(?", "("),
    ("(?a)", "a"),
    ("()", ""),
    ("(a", "a"),
    ("a)", "a)"),
    ("(|a)", ""),
    ("a|", ""),
    ("|", ""),
    ("^*", ""),
    ("$*", ""),
    ("\\b*", ""),
    ("(?:)*", ""),
    ("(a*)*", "aa"),
    ("(a*)+", ""),
    ("(a|ab)(c|bcd)(d*)", "abcd"),
    ("(^)*", ""),
    ("(^)*a", "a"),
    ("(\\b)+a", "a"),
    ("((?=a))*a", "a"),
    ("()*", ""),
    ("()+", ""),
    ("(a|)*", "aa"),
    ("($)?", ""),
    ("(?:^|a)+b", "ab"),
    ("((a)|b)*\\2", "aba"),
    ("((a)|b)*\\2", "ab"),
    ("(a*)*\\1", "aa"),
    ("(a*)*\\1", "a"),
    ("(a*)*b\\1", "aab"),
    ("(a*)+?b\\1", "aab"),
    ("(a?)+?\\1b", "ab"),
    ("(a?)+?\\1b", "b"),
    ("(a|b)*?\\1", "abb"),
    ("(?:(a)|(b))+\\1\\2", "abab"),
    ("(?:(a)|(b))+\\1\\2", "abb"),
    ("(?:(a)|(b))+\\1\\2", "aba"),
    ("(?=(a))\\1", "a"),
    ("(?!(a))\\1b", "b"),
    ("(?=(a+))a*b\\1", "baaabac"),
    ("(.*)\\1", "éé"),
    ("(.)\\1", "é"),
    # other punctuation
    ("a\tb", "a\tb"),
    ("a b", "a b"),
    ("#", "#"),
    ("a-b", "a-b"),
    ('"', '"'),
    ("'", "'"),
    ("<", "<"),
    ("&&", "&&"),
    ("~", "~"),
    ("[&&]", "&"),
    ("[a&&b]", "&"),
    ("[a~~b]", "~"),
    ("[a--b]", "-"),
    ("[a||b]", "|"),
]


def _literal(text: str) -> str:
    """`text` as a Soufflé string literal (its lexer reads these escapes)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r") + '"'


PROGRAM = """
.decl case(i: number, pat: symbol, s: symbol)
.decl yes(i: number)
.decl no(i: number)
.decl bytes(i: number, p: number, s: number)
bytes(i, strlen(p), strlen(s)) :- case(i, p, s).
yes(i) :- case(i, p, s), match(p, s).
no(i) :- case(i, p, s), !match(p, s).
.output yes, no, bytes
"""


def _numbers(path: Path) -> set[int]:
    return {int(line) for line in path.read_text().split()}


def main(souffle: str = SOUFFLE) -> None:
    facts = "".join(
        f"case({i}, {_literal(p)}, {_literal(s)}).\n"
        for i, (p, s) in enumerate(CASES)
        if not _needs_file(p, s)
    )
    with tempfile.TemporaryDirectory() as work:
        directory = Path(work)
        (directory / "case.facts").write_text(
            "".join(f"{i}\t{p}\t{s}\n" for i, (p, s) in enumerate(CASES) if _needs_file(p, s))
        )
        (directory / "regex.dl").write_text(PROGRAM + ".input case\n" + facts)
        subprocess.run(
            [souffle, "-F", work, "-D", work, str(directory / "regex.dl")],
            check=True,
            capture_output=True,
        )
        yes, no = _numbers(directory / "yes.csv"), _numbers(directory / "no.csv")
        lengths = {
            int(i): (int(p), int(s))
            for i, p, s in (
                line.split("\t") for line in (directory / "bytes.csv").read_text().splitlines()
            )
        }
    rows = []
    for index, (pattern, subject) in enumerate(CASES):
        assert lengths[index] == (len(pattern.encode()), len(subject.encode())), (index, pattern)
        rows.append(
            {
                "pattern": pattern,
                "subject": subject,
                "match": index in yes,
                "not_match": index in no,
            }
        )
    TABLE.write_text(json.dumps(rows, ensure_ascii=False, indent=0) + "\n")


def _needs_file(pattern: str, subject: str) -> bool:
    """Control bytes other than tab, newline and carriage return have no escape in a Soufflé
    string literal: such cases go through a facts file (tab-separated, so no tab there)."""
    return any(ord(c) < 32 and c not in "\t\n\r" for c in pattern + subject)


if __name__ == "__main__":
    main(*sys.argv[1:])
