"""`--jobs` and `REASONER_JOBS`: the threads of Polars' pool, set before Polars is imported,
and refused with the option's or the variable's name when they are not a positive integer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reasoner.support.jobs import JOBS_VARIABLE, JobsError, parse_jobs
from tests.conftest import environment_without_jobs
from tests.unit.cli.test_cli import TC


def _python(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment_without_jobs() | environment,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("text", ["0", "-2", "two", "", "1.5"])
def test_a_number_of_jobs_is_a_positive_integer(text: str) -> None:
    with pytest.raises(JobsError, match=f"--jobs: expected an integer >= 1, got {text!r}"):
        parse_jobs(text, "--jobs")


def test_parsing_the_options_imports_no_polars() -> None:
    """What makes `--jobs` possible at all: the pool is sized when Polars is imported."""
    done = _python(
        "import sys; from reasoner.cli.main import build_parser; "
        "build_parser().parse_args(['run', 'p.dl', '-j', '1']); "
        "print(sorted(m for m in ('polars', 'numpy', 'reasoner.materialization') "
        "if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_environment_sizes_the_pool_of_the_library() -> None:
    done = _python(
        "import reasoner, polars; print(polars.thread_pool_size(), reasoner.jobs_in_effect())",
        REASONER_JOBS="1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads read from /proc")
def test_numpy_starts_no_blas_threads_unless_asked() -> None:
    """OpenBLAS would start a thread for every core but one (spinning through the start) where
    nothing calls BLAS; a user's own setting stands."""
    done = _python("import os, reasoner, numpy; print(len(os.listdir('/proc/self/task')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    done = _python(
        "import os, reasoner; print(os.environ['OPENBLAS_NUM_THREADS'])", OPENBLAS_NUM_THREADS="2"
    )
    assert done.stdout.strip() == "2", done.stderr


def test_a_number_asked_for_once_the_pool_exists_is_refused() -> None:
    done = _python(
        "import polars\n"
        "from reasoner.support.jobs import JobsError, use_jobs\n"
        "use_jobs(polars.thread_pool_size())\n"
        "try:\n"
        "    use_jobs(polars.thread_pool_size() + 1)\n"
        "except JobsError as error:\n"
        "    print(error)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "Polars already runs" in done.stdout
    assert f"set {JOBS_VARIABLE}=" in done.stdout


@pytest.mark.parametrize(
    ("option", "environment"), [(["-j", "1"], {}), ([], {"REASONER_JOBS": "1"})]
)
def test_run_reports_the_threads_it_ran_with(
    tmp_path: Path, option: list[str], environment: dict[str, str]
) -> None:
    (tmp_path / "tc.dl").write_text(TC, encoding="utf-8")
    (tmp_path / "edge.facts").write_text("1\t2\n2\t3\n", encoding="utf-8")
    stats = tmp_path / "stats.json"
    command = (
        "import sys; from reasoner.cli.main import main; "
        f"sys.exit(main(['run', {str(tmp_path / 'tc.dl')!r}, '-F', {str(tmp_path)!r}, "
        f"'-D', {str(tmp_path / 'out')!r}, '--stats', {str(stats)!r}, *{option!r}]))"
    )
    done = _python(command, **environment)
    assert done.returncode == 0, done.stderr
    assert json.loads(stats.read_text())["jobs"] == 1
    assert (tmp_path / "out" / "tc.csv").read_text().splitlines() == ["1\t2", "1\t3", "2\t3"]


def test_a_malformed_variable_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "tc.dl").write_text(TC, encoding="utf-8")
    done = _python(
        "import sys; from reasoner.cli.main import main; "
        f"sys.exit(main(['run', {str(tmp_path / 'tc.dl')!r}, '-F', {str(tmp_path)!r}]))",
        REASONER_JOBS="many",
    )
    assert done.returncode == 2
    assert "REASONER_JOBS: expected an integer >= 1, got 'many'" in done.stderr
    assert not (tmp_path / "tc.csv").exists()
