"""The v1 routers, one module per resource.

Layer: above `core`, `feed` and `store`; the only place that knows HTTP statuses' use in
routes. Used by `service.app`.
"""
