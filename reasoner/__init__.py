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
