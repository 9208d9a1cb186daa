"""Static analysis of parsed programs: arities, types, safety, stratification."""

from reasoner.analysis.check import analyze, check_program, check_query
from reasoner.analysis.model import AnalyzedProgram, RelationInfo, Stratum, Value

__all__ = [
    "AnalyzedProgram",
    "RelationInfo",
    "Stratum",
    "Value",
    "analyze",
    "check_program",
    "check_query",
]
