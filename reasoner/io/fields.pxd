"""The bytes and column kinds of fact text, shared by its reader (`reasoner.io.fact_read`) and
its writer (`reasoner.io.fact_text`)."""

cdef enum:
    NEWLINE = 10
    PLUS = 43
    MINUS = 45
    ZERO = 48
    NINE = 57

cdef enum:
    NUMBER_KIND = 0
    UNSIGNED_KIND = 1
    SYMBOL_KIND = 2
