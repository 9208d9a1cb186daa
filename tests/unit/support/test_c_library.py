"""C libraries open by soname, else wherever the system's search finds them
(`reasoner.support.c_library`)."""

import ctypes

import pytest

from reasoner.support.c_library import c_library


def test_a_library_opens_by_its_soname() -> None:
    assert isinstance(c_library("m", "libm.so.6").pow, ctypes._CFuncPtr)


def test_a_soname_that_does_not_open_falls_back_to_the_search() -> None:
    libm = c_library("m", "libm.so.999")
    libm.pow.argtypes = (ctypes.c_double, ctypes.c_double)
    libm.pow.restype = ctypes.c_double
    assert libm.pow(2.0, 10.0) == 1024.0


def test_a_library_found_nowhere_is_an_os_error() -> None:
    with pytest.raises(OSError):
        c_library("no-such-library-anywhere", "libno-such-library.so.1")
