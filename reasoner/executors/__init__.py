"""The executors of a stratum's Bootstrap: the shared counting loop (`bootstrap`, Algorithm 2) and
aggregates, the in-process vectorized executor (`local/`), Spark (`spark/`), and which of them
runs a stratum (`registry`, `cost`).

Layer: above `kernel` and `io`. Used by the epoch and the facade.
"""
