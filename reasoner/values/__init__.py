"""The values: the column types, 64-bit arithmetic, floats, records, the symbol table and the
functors.

Layer: the ground floor beside `storage` and above `support` and `errors`; it imports nothing
else of the engine. Used by every layer above, from the parser (constants) to the executors.
"""
