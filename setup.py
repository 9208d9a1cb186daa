"""The compiled part of the engine: `reasoner.compact.table` (Cython). Everything else about
the package is in pyproject.toml; setuptools reads this file only for the extension."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(
                "reasoner.compact.table",
                ["reasoner/compact/table.pyx"],
                extra_compile_args=["-O3"],
            )
        ],
        compiler_directives={"language_level": "3"},
    )
)
