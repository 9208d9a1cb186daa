"""Soufflé-style fact files: reading `.facts` inputs and writing `.csv` outputs."""

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
