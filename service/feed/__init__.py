"""The change feed: live streams, catch-up from the store, admission, the sender thread and its
compiled socket writes.

Layer: under `core` and `api`, above `store`. Used by the runtime (publishing epochs) and the
changes route.
"""
