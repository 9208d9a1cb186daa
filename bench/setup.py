"""`python -m bench.setup`: create bench/.venv312 with pydbsp (needs Python >= 3.12)."""

import sys

from bench.systems import setup_pydbsp

sys.exit(0 if setup_pydbsp() is not None else 1)
