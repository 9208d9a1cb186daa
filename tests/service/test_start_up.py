"""What a server loads to start: every test, restart and rebuild pays it, and a store that is
only read never needs more."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.conftest import Server


def test_a_server_starts_without_polars_or_arrow(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """Polars and Arrow are imported where first used (`reasoner.support.polars_on_demand`,
    local imports in the exports and the interned store, in the one migration that reads
    segments): 0.35 s of a start's 1.9 s of CPU and 36 MiB before it. The mapped files of the
    running process say what it loaded, migrations and program included."""
    program = tmp_path / "tc.dl"
    program.write_text(".decl edge(x: number, y: number)\ntc(x, y) :- edge(x, y).\n")
    server = make_server(REASONER_PROGRAM=str(program)).start()
    assert server.process is not None
    mapped = Path(f"/proc/{server.process.pid}/maps").read_text()
    assert "polars" not in mapped
    assert "arrow" not in mapped
    with server.client() as client:
        assert client.get("/v1/relations").status_code == 200
