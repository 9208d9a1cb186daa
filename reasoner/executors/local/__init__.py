"""The in-process vectorized executor (Polars), with the per-tuple kernel for small iterations.

Layer: part of `executors`. Used by `executors.registry`.
"""
