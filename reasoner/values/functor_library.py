"""Where user-defined functors come from: Python functions and C functions, by name.

A program declares a functor (`.functor f(x: number): number`) and calls it (`@f(x)`); its
implementation is loaded beside the program, never named by it:

- a Python module file (`reasoner run --functors functors.py`, the service's
  `REASONER_FUNCTORS`): its top-level callables are the functors of their names;
- C shared libraries, found as Soufflé finds them (`-l NAME -L DIR`: `DIR/libNAME.so`, then
  the dynamic loader's own search), called through `ctypes` with the signatures of Soufflé's
  64-bit build (its `RamDomain` is 64 bits): `number` is `int64_t`, `unsigned` `uint64_t`,
  `float` `double`, `symbol` `const char*` (UTF-8, in and out; a result is copied at once, so
  a static buffer is fine).

A Python functor is called with plain values: an `int` for a number (from -2^63 to 2^63 - 1)
and for an unsigned (0 to 2^64 - 1), a `float`, a `str` for a symbol; it returns one of its
declared type (`reasoner.values.user_functors` checks it). `stateful` changes nothing for it:
Soufflé hands a stateful functor its C++ symbol and record tables and the raw numbers of its
arguments, so that it can read and make symbols and records; a Python functor reads and makes
symbols as `str` values anyway, so a program declaring a functor `stateful` runs unchanged with
a Python implementation written against plain values. A stateful C functor is refused by name:
the engine has no C++ tables to hand it.

Every functor must be a function of its arguments: Update re-derives a tuple by calling it
again and must get the same value (the invariant that Update equals a fresh Bootstrap rests on
it), and the vectorized executor calls it once per distinct tuple of arguments. It is called
after a rule's other comparisons (`reasoner.analysis.user_functors`), but may be called on the
arguments of an instantiation that a negation or an atom then rejects. It may be called from
several threads at once (queries beside the writer).

Layer: `values`; the analysis binds the declared functors to these implementations, the
command line and the service load them.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasoner.errors import UNKNOWN_FUNCTOR, UNSUPPORTED_FEATURE
from reasoner.support.digest import short_digest
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType

Implementation = Callable[..., object]
"""A functor's function over plain values (see the module's docstring)."""

C_TYPES: dict[ColumnType, type] = {
    NUMBER: ctypes.c_int64,
    UNSIGNED: ctypes.c_uint64,
    FLOAT: ctypes.c_double,
    SYMBOL: ctypes.c_char_p,
}
"""The C type of each declared type, as Soufflé's 64-bit build passes it."""


class FunctorLoadError(Exception):
    """A functor module or library that cannot be loaded (the message says which and why)."""


class FunctorUnavailable(Exception):
    """A declared functor the library cannot provide: `code` is `unknown_functor` (no function
    of its name) or `unsupported_feature` (a stateful C functor)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class SharedLibrary:
    """A C shared library loaded for its functors."""

    path: str
    handle: ctypes.CDLL = field(compare=False)


@dataclass(eq=False)
class FunctorLibrary:
    """The implementations of user-defined functors a process was started with, by name: the
    Python functions first, then each C library in the order given (as Soufflé takes the first
    library that has the symbol)."""

    functions: Mapping[str, Implementation] = field(default_factory=dict)
    libraries: Sequence[SharedLibrary] = ()
    sources: tuple[str, ...] = ()
    """What was loaded, as messages name it (a module's file name, a library's)."""
    deferred: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Libraries (name, directories) looked for only when a functor is first wanted, and
    skipped if absent: Soufflé's default `-l functors`, which a program without functors never
    loads."""
    _bound: dict[tuple[str, tuple[ColumnType, ...], ColumnType], Implementation] = field(
        default_factory=dict, repr=False
    )
    """C functions with their signatures set, once per signature: one implementation object
    per binding (`reasoner.values.functors.register` knows a binding by it)."""

    @classmethod
    def python_module(cls, path: str | Path) -> FunctorLibrary:
        """The top-level callables of the Python file at `path`, by name (those whose names
        start with `_` are not functors)."""
        module = _load_module(Path(path))
        functions = {
            name: value
            for name, value in vars(module).items()
            if callable(value) and not name.startswith("_")
        }
        return cls(functions, (), (Path(path).name,))

    @classmethod
    def shared_libraries(
        cls, names: Iterable[str], directories: Sequence[str] = (".",), *, required: bool = True
    ) -> FunctorLibrary:
        """Soufflé's `-l NAME -L DIR`: `libNAME.so` in each directory in turn, then through
        the dynamic loader's search path (a NAME holding `/` or ending in `.so` is a path).
        A library not found is a `FunctorLoadError`; unless `required` is False (Soufflé's
        default `-l functors`), when they are looked for at the first functor wanted, and those
        absent are skipped."""
        if not required:
            return cls(deferred=tuple((name, tuple(directories)) for name in names))
        libraries = []
        for name in names:
            found = _find_library(name, directories)
            if found is None:
                where = ", ".join(directories) or "."
                raise FunctorLoadError(
                    f"cannot find the functor library lib{name}.so (in {where} or the dynamic "
                    "loader's path)"
                )
            libraries.append(found)
        return cls({}, tuple(libraries), tuple(Path(library.path).name for library in libraries))

    @staticmethod
    def merged(*parts: FunctorLibrary | None) -> FunctorLibrary:
        """One library of several, the earlier ones first."""
        functions: dict[str, Implementation] = {}
        libraries: list[SharedLibrary] = []
        sources: list[str] = []
        deferred: list[tuple[str, tuple[str, ...]]] = []
        for part in parts:
            if part is None:
                continue
            for name, function in part.functions.items():
                functions.setdefault(name, function)
            libraries.extend(part.libraries)
            sources.extend(part.sources)
            deferred.extend(part.deferred)
        return FunctorLibrary(functions, tuple(libraries), tuple(sources), tuple(deferred))

    def describe(self) -> str:
        """What was loaded, for a message."""
        if not self.sources:
            return "no functors are loaded"
        return "the functors loaded are those of " + ", ".join(self.sources)

    def implementation(
        self, name: str, params: tuple[ColumnType, ...], result: ColumnType, stateful: bool
    ) -> Implementation:
        """The function of functor `name` with these declared types; `FunctorUnavailable`
        when there is none, or only a stateful C one."""
        function = self.functions.get(name)
        if function is not None:
            return function
        self._load_deferred()
        for library in self.libraries:
            try:
                pointer = library.handle[name]
            except AttributeError:
                continue
            if stateful:
                raise FunctorUnavailable(
                    UNSUPPORTED_FEATURE,
                    f"the stateful functor `{name}` of {library.path} is not supported: "
                    "Soufflé hands a stateful functor its C++ symbol and record tables, "
                    "which the engine does not have; implement it in Python (a function of "
                    "plain values, `--functors`)",
                )
            return self._c_function(name, pointer, params, result)
        raise FunctorUnavailable(
            UNKNOWN_FUNCTOR,
            f"functor `{name}` is declared, but no implementation of it is loaded: "
            f"{self.describe()}",
        )

    def _load_deferred(self) -> None:
        if not self.deferred:
            return
        found = [_find_library(name, directories) for name, directories in self.deferred]
        loaded = [library for library in found if library is not None]
        self.libraries = (*self.libraries, *loaded)
        self.sources = (*self.sources, *(Path(library.path).name for library in loaded))
        self.deferred = ()

    def _c_function(
        self,
        name: str,
        pointer: Any,
        params: tuple[ColumnType, ...],
        result: ColumnType,
    ) -> Implementation:
        key = (name, params, result)
        bound = self._bound.get(key)
        if bound is None:
            pointer.argtypes = [C_TYPES[kind] for kind in params]
            pointer.restype = C_TYPES[result]
            bound = self._bound[key] = _c_call(name, pointer, params, result)
        return bound


def _c_call(
    name: str, pointer: Any, params: tuple[ColumnType, ...], result: ColumnType
) -> Implementation:
    """A C function as a function of plain values: symbols to and from UTF-8 bytes."""
    symbols = [kind == SYMBOL for kind in params]

    def call(*args: object) -> object:
        converted = [
            str(arg).encode() if symbol else arg for arg, symbol in zip(args, symbols, strict=True)
        ]
        value = pointer(*converted)
        if result != SYMBOL:
            return value
        if value is None:
            raise ValueError(f"the C function `{name}` returned a null pointer")
        return bytes(value).decode()  # an invalid UTF-8 result is a UnicodeDecodeError

    call.__name__ = name
    return call


def _find_library(name: str, directories: Sequence[str]) -> SharedLibrary | None:
    if "/" in name or name.endswith(".so"):
        paths = [Path(name)]
    else:
        paths = [Path(directory) / f"lib{name}.so" for directory in directories or (".",)]
    for path in paths:
        if path.is_file():
            try:
                return SharedLibrary(str(path), ctypes.CDLL(str(path.resolve())))
            except OSError as error:  # there, but not loadable: say so rather than skip it
                raise FunctorLoadError(f"cannot load {path}: {error}") from None
    if "/" in name:
        return None
    soname = name if name.endswith(".so") else f"lib{name}.so"
    try:  # the dynamic loader's own search, where Soufflé's dlopen falls back to
        return SharedLibrary(soname, ctypes.CDLL(soname))
    except OSError:
        return None


def _load_module(path: Path) -> object:
    """Import the Python file at `path` under a name of its own."""
    resolved = path.resolve()
    digest = short_digest(str(resolved))
    module_name = f"reasoner_functors_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None or not resolved.is_file():
        raise FunctorLoadError(f"cannot load functors from {path}: no such Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise FunctorLoadError(
            f"cannot load functors from {path}: {type(error).__name__}: {error}"
        ) from error
    return module
