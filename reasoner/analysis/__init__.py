"""Static analysis of parsed programs: arities, types, safety, stratification.

Layer: above `syntax` and `values`. Used by the plans and everything above them.
"""

from reasoner.analysis.check import analyze, check_preprocessed, check_program, check_query
from reasoner.analysis.model import AnalyzedProgram, RelationInfo, Stratum
from reasoner.values.types import Value

__all__ = [
    "AnalyzedProgram",
    "RelationInfo",
    "Stratum",
    "Value",
    "analyze",
    "check_preprocessed",
    "check_program",
    "check_query",
]
