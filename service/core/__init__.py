"""The write path and what bounds it: the runtime that owns the materialization and the store, the
epoch's budget, write priority, failpoints and metrics.

Layer: under `api`, above `feed` and `store`; it imports no FastAPI. Used by the routes and
`service.app`.
"""
