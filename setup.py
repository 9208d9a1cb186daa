"""The compiled part of the engine (Cython): the state's tables (`reasoner.compact.table`) and
the Update kernel that runs over them (`reasoner.update.kernel`), and the live feed's writes to
many sockets at once (`service.socket_fanout`). Everything else about the
package is in pyproject.toml; setuptools reads this file only for the extensions."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(name, [path], extra_compile_args=["-O3"])
            for name, path in [
                ("reasoner.compact.table", "reasoner/compact/table.pyx"),
                ("reasoner.update.kernel", "reasoner/update/kernel.pyx"),
                ("service.socket_fanout", "service/socket_fanout.pyx"),
            ]
        ],
        compiler_directives={"language_level": "3"},
    )
)
