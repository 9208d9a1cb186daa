"""The Datalog front end's syntax layer: tokens, the parser, and the AST it produces."""

from reasoner.syntax.parser import parse_body, parse_program

__all__ = ["parse_body", "parse_program"]
