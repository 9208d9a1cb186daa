"""Support every layer leans on: the epoch's deadline and memory allowance, the lanes (threads)
that split work, the readers-writer lock, pausing the garbage collector.

Layer: under `values` and `storage`, above `errors` only; it imports nothing else of the
engine. Used by the kernel, the executors, the epoch and the facade.
"""
