# cython: language_level=3, boundscheck=False, wraparound=False
# cython: initializedcheck=False, nonecheck=False
"""Strings numbered in a dict, a list of them at a time, in C.

`reasoner.values.symbols.SymbolTable` interns a fact file's symbols into the run's table:
945,280 of them for a generated LUBM-30, where one `intern` call each took 0.36-0.46 s,
most of it the interpreter's calls and not the dict's work (0.23-0.30 s here).

Layer: `support`."""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.object cimport PyObject
from libc.stdint cimport int64_t

import numpy as np


def numbered(dict ids, list strings, list texts):
    """The id of each string of `texts` in `ids` (string -> id), as int64: a string not in it
    takes the next id, `len(strings)`, and is appended to `strings`, so that `strings` stays
    the list of `ids`' keys by id."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(texts)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] at = out
    cdef PyObject* found
    cdef int64_t ident
    for i in range(n):
        text = <object>PyList_GET_ITEM(texts, i)
        found = PyDict_GetItem(ids, text)
        if found != NULL:
            at[i] = PyLong_AsLongLong(<object>found)
            continue
        ident = PyList_GET_SIZE(strings)
        PyDict_SetItem(ids, text, ident)
        PyList_Append(strings, text)
        at[i] = ident
    return out
