"""Soufflé-style fact files: reading `.facts` inputs and writing `.csv` outputs.

Layer: beside `kernel`, above `analysis`, `values` and `errors`. Used by the epoch (change
sets), the facade and the command line; the service reads facts through the public face.
"""

from reasoner.io.facts import (
    format_rows,
    load_inputs,
    parse_facts_text,
    read_facts,
    write_csv,
    write_outputs,
)

__all__ = [
    "format_rows",
    "load_inputs",
    "parse_facts_text",
    "read_facts",
    "write_csv",
    "write_outputs",
]
