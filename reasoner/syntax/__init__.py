"""The Datalog front end's syntax layer: tokens, the parser, and the AST it produces.

Layer: above `values` (the constants' types) and `errors`. Used by the analysis and everything
above it.
"""

from reasoner.syntax.parser import parse_body, parse_program

__all__ = ["parse_body", "parse_program"]
