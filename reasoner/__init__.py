"""An elastic, incremental Datalog engine (see DESIGN.md).

Polars' allocator (jemalloc, configured by `_RJEM_MALLOC_CONF`) keeps the pages a frame
freed for ten seconds by default: after a bulk load the service held some 100 MB of them
beside its state. Unless the environment says otherwise, they go back to the system at once,
from a background thread (measured: no slower on a load of 3 M facts). This must be set
before Polars is first imported, which the engine's modules do.
"""

import os

os.environ.setdefault(
    "_RJEM_MALLOC_CONF", "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0"
)

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reasoner.elastic.bootstrap import BootstrapCancelled, Cancellation
    from reasoner.elastic.engines import EngineSettings
    from reasoner.elastic.epoch import Delta, EpochReport
    from reasoner.materialization import Materialization

_PUBLIC = {
    "Materialization": "reasoner.materialization",
    "Delta": "reasoner.elastic.epoch",
    "EpochReport": "reasoner.elastic.epoch",
    "EngineSettings": "reasoner.elastic.engines",
    "Cancellation": "reasoner.elastic.bootstrap",
    "BootstrapCancelled": "reasoner.elastic.bootstrap",
}
"""The public API (`from reasoner import Materialization, Delta`), which the service and the
benchmarks use instead of the modules that hold it. Loaded on first use: `import reasoner`
alone (the parser, the command line's start) does not pay for Polars."""

__all__ = [
    "BootstrapCancelled",
    "Cancellation",
    "Delta",
    "EngineSettings",
    "EpochReport",
    "Materialization",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'reasoner' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)
