"""The HTTP API, one module per resource; each holds a router of reads and one of writes
(`service.api.deps`), whose access checks differ."""
