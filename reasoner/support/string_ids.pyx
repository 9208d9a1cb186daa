# cython: language_level=3, boundscheck=False, wraparound=False
# cython: initializedcheck=False, nonecheck=False
"""Strings numbered in a dict, or looked up in one, a list of them at a time, in C.

`reasoner.values.symbols.SymbolTable` interns a fact file's symbols into the run's table:
945,280 of them for a generated LUBM-30, where one `intern` call each took 0.36-0.46 s,
most of it the interpreter's calls and not the dict's work (0.23-0.30 s here).

Layer: `support`."""

from cpython.dict cimport PyDict_Contains, PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t
from libc.string cimport memset

import numpy as np

cdef enum:
    LENGTHS = 256  # keys' lengths told apart one by one below this


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


def held_of(dict ids, list texts):
    """Whether each string of `texts` is a key of `ids`, as a bool array. `ids` is small and
    `texts` large (a file's symbols against a run's constants): only a string as long as a
    key is looked up, and the others are never hashed. A file's strings are new objects, and
    hashing LUBM-30's 945 k of them for a dozen constants took most of 0.1 s."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(texts), size
    cdef unsigned char lengths[LENGTHS]
    cdef bint long_keys = False
    out = np.zeros(n, dtype=np.bool_)
    cdef unsigned char[::1] held = out.view(np.uint8)
    memset(lengths, 0, LENGTHS)
    for key in ids:
        size = len(<str>key)
        if size < LENGTHS:
            lengths[size] = 1
        else:
            long_keys = True
    for i in range(n):
        text = <object>PyList_GET_ITEM(texts, i)
        size = PyUnicode_GET_LENGTH(text)
        if (lengths[size] if size < LENGTHS else long_keys) and PyDict_Contains(ids, text):
            held[i] = 1
    return out
