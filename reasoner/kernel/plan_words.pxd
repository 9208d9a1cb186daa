# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The plan words the kernel interprets (`reasoner.kernel.plans` writes them): their tags, how
to step over an expression or a step, and the arithmetic and comparisons of their expressions
with Soufflé's semantics. Only enums and inline functions: `reasoner/kernel/interpreter.pyx`
cimports them, and nothing of this module exists at run time. (`cdivision` above is what makes
`/` and `%` C's, truncating, as Soufflé's: the functions are compiled with this file's
directives, not with the interpreter's.)"""

from libc.math cimport pow
from libc.stdint cimport INT64_MIN, int64_t, uint64_t

# Plan words (see reasoner/kernel/plans.py, which writes them).
cdef enum:
    STEP_ATOM = 1
    STEP_NEG = 2
    STEP_TEST = 3
    STEP_ASSIGN = 4
    STEP_RANGE = 5

cdef enum:
    MODE_SCAN = 0
    MODE_INDEX = 1
    MODE_MEMBER = 2

cdef enum:
    NEG_TUPLE = 0
    NEG_INDEX = 1
    NEG_ANY = 2

cdef enum:
    DRIVE_ATOM = 0
    DRIVE_NEG = 1
    DRIVE_HEAD = 2
    DRIVE_NONE = 3

# Which rows of a probed atom qualify: any (Update: the union of both epochs), committed only
# (Bootstrap: I_{k-1}, not the heads staged in iteration k), committed and not of iteration
# k - 1 (Bootstrap: I_{k-2}, the first-position decomposition's atoms before the delta).
cdef enum:
    ROWS_ANY = 0
    ROWS_COMMITTED = 1
    ROWS_OLDER = 2

cdef enum:
    TERM_CONST = 0
    TERM_REG = 1
    OP_ADD = 2
    OP_SUB = 3
    OP_MUL = 4
    OP_DIV = 5
    OP_MOD = 6
    OP_POW = 7
    OP_BAND = 8
    OP_BOR = 9
    OP_BXOR = 10
    OP_BSHL = 11
    OP_BSHR = 12
    OP_BSHRU = 13
    OP_LAND = 14
    OP_LOR = 15
    OP_LXOR = 16
    OP_MAX = 17
    OP_MIN = 18
    OP_CALL = 19    # a string functor: value (functor << 8) | operands, see `Kernel._call`
    OP_UDIV = 20    # `/`, `%` and `^` on unsigned values (reasoner.analysis.numeric)
    OP_UMOD = 21
    OP_UPOW = 22

cdef enum:
    CMP_EQ = 0
    CMP_NE = 1
    CMP_LT = 2
    CMP_LE = 3
    CMP_GT = 4
    CMP_GE = 5


cdef inline int64_t _skip_expr(const int64_t* code, int64_t p) noexcept nogil:
    return p + 1 + 2 * code[p]


cdef inline int64_t _first_key(const int64_t* code, int64_t p) noexcept nogil:
    """Where the key of step `p`, an atom or a negation, begins: an atom's after its rows'
    filter, a word (column, expression) each; a negation's after its index, an expression
    each. Read through `_key_expression` and `_skip_expr` (`reasoner.kernel.plans` writes
    them)."""
    return p + 7 if code[p] == STEP_ATOM else p + 6


cdef inline int64_t _key_expression(int64_t q, bint atom) noexcept nogil:
    """The expression of the key word at `q` of an atom's step (`atom`) or a negation's: an
    atom's follows its column."""
    return q + atom


cdef inline bint _calls(const int64_t* code, int64_t p) noexcept nogil:
    """Whether the expression at `p` calls a string functor."""
    cdef int64_t i
    for i in range(code[p]):
        if code[p + 1 + 2 * i] == OP_CALL:
            return True
    return False


cdef inline bint _calls_functor(const int64_t* code, int64_t checks, const int64_t* steps,
                         int nsteps, int64_t head) noexcept:
    """Whether a plan calls a string functor anywhere: such a call reads and extends the
    symbol table, so the symbols' numbers would follow the lanes' timing."""
    cdef int64_t i, j, n, p, q, kind
    n = code[checks]
    p = checks + 1
    for i in range(n):
        if _calls(code, p + 1):
            return True
        p = _skip_expr(code, p + 1)
    for j in range(nsteps):
        p = steps[j]
        kind = code[p]
        if kind == STEP_ATOM or kind == STEP_NEG:
            q = _first_key(code, p)
            for i in range(code[p + 5]):
                q = _key_expression(q, kind == STEP_ATOM)
                if _calls(code, q):
                    return True
                q = _skip_expr(code, q)
        elif kind == STEP_TEST:
            if _calls(code, p + 2) or _calls(code, _skip_expr(code, p + 2)):
                return True
        elif kind == STEP_RANGE:
            p += 4
            for i in range(code[steps[j] + 3]):
                if _calls(code, p):
                    return True
                p = _skip_expr(code, p)
        elif _calls(code, p + 2):  # STEP_ASSIGN
            return True
    n = code[head]
    p = head + 1
    for i in range(n):
        if _calls(code, p):
            return True
        p = _skip_expr(code, p)
    return False


cdef inline int _last_lookup(const int64_t* code, const int64_t* steps, int nsteps,
                             bint excluded) noexcept:
    """The key's words of a plan's last step when it looks one tuple up (a positive atom,
    every column bound), else 0: the step an Update may put off (`reasoner.kernel.deferred`).
    None for an `excluded` plan: a Bootstrap's, whose emissions stage heads, or a full
    re-discovery's, driven apart (`Kernel._hand_full`)."""
    cdef int64_t p = steps[nsteps - 1] if nsteps and not excluded else -1
    if p >= 0 and code[p] == STEP_ATOM and code[p + 3] == MODE_MEMBER:
        return <int>code[p + 5]
    return 0


cdef inline int64_t _driver_column(const int64_t* code, int64_t binds,
                                   int64_t register) noexcept nogil:
    """The column whose value the driver's (column, register) pairs at `binds` set `register`
    to, or -1."""
    cdef int64_t i
    for i in range(code[binds]):
        if code[binds + 2 + 2 * i] == register:
            return code[binds + 1 + 2 * i]
    return -1


cdef enum:
    EARLY_WORDS = 8  # the longest key a step started early may have


cdef inline bint _keyed_by_driver(const int64_t* code, int64_t p, int64_t binds) noexcept:
    """Whether step `p` probes a table by a key of at most EARLY_WORDS words, each a constant
    or a register the driver binds: its slot can be loaded from the driver's words alone."""
    cdef int64_t q, e, i
    cdef bint atom = code[p] == STEP_ATOM
    if not (atom and code[p + 3] != MODE_SCAN) and not (
            code[p] == STEP_NEG and code[p + 3] != NEG_ANY):
        return False
    if code[p + 5] > EARLY_WORDS:
        return False
    q = _first_key(code, p)
    for i in range(code[p + 5]):
        e = _key_expression(q, atom)
        if code[e] != 1 or not (code[e + 1] == TERM_CONST or (
                code[e + 1] == TERM_REG and _driver_column(code, binds, code[e + 2]) >= 0)):
            return False
        q = _skip_expr(code, e)
    return True


cdef inline int _early_step(const int64_t* code, const int64_t* steps, int nsteps,
                            int64_t binds, bint excluded) noexcept:
    """The first step but the plan's first that probes a table by a key the driver alone
    gives (`_keyed_by_driver`): its slot can be loaded as the plan begins, while the steps
    before it probe (`reasoner.kernel.deferred._start_early`). -1 for none. The first step
    probes as the plan begins: its slot is loaded sooner, when the tuple that drives it is
    scheduled, if at all (`deferred._look_ahead`). A key word that is an expression would
    have to be evaluated at the drive, where it may have no value or call a string functor. An
    `excluded` plan (a Bootstrap's, a full re-discovery's) starts nothing early: a Bootstrap
    queues its drives and loads their heads ahead its own way (`_count_found`), and this was
    measured on Updates only."""
    cdef int s
    for s in range(1, nsteps if not excluded else 0):
        if _keyed_by_driver(code, steps[s], binds):
            return s
    return -1


cdef inline int64_t _skip_step(const int64_t* code, int64_t p) noexcept nogil:
    cdef int64_t kind = code[p]
    cdef int64_t i, n, q
    if kind == STEP_ATOM or kind == STEP_NEG:
        # An atom: kind, relation, position, mode, index, nkeys, filter, (column, expr)*,
        # nbinds, (c, r)*, nequal, (c, c)*. A negation: kind, relation, position, negation
        # kind, index, nkeys, expr*.
        q = _first_key(code, p)
        for i in range(code[p + 5]):
            q = _skip_expr(code, _key_expression(q, kind == STEP_ATOM))
        if kind == STEP_NEG:
            return q
        q += 1 + 2 * code[q]
        return q + 1 + 2 * code[q]
    if kind == STEP_TEST:
        # kind, comparison, left, right
        p = _skip_expr(code, p + 2)
        return _skip_expr(code, p)
    if kind == STEP_RANGE:
        # kind, test, register, bounds, expr * bounds
        n = code[p + 3]
        p += 4
        for i in range(n):
            p = _skip_expr(code, p)
        return p
    # STEP_ASSIGN: kind, register, expr
    return _skip_expr(code, p + 2)


# -- arithmetic with Soufflé's semantics (reasoner.values.arith): 64-bit wrap-around, C division ------

cdef inline int64_t _power(int64_t a, int64_t b) noexcept nogil:
    """`reasoner.values.arith.power`: `(int64_t) pow((double) a, (double) b)` with x86-64's
    value, -2**63, for a power outside the range (C leaves that conversion undefined)."""
    cdef double result = pow(<double>a, <double>b)
    if -9223372036854775808.0 <= result < 9223372036854775808.0:
        return <int64_t>result
    return INT64_MIN


cdef inline uint64_t _unsigned_power(uint64_t a, uint64_t b) noexcept nogil:
    """`reasoner.values.arith.unsigned_power`: `(uint64_t) pow((double) a, (double) b)`, and
    0 for a power of 2**64 or more."""
    cdef double result = pow(<double>a, <double>b)
    if 0.0 <= result < 18446744073709551616.0:
        return <uint64_t>result
    return 0


cdef inline bint _arith(int op, int64_t a, int64_t b, int64_t* out) noexcept nogil:
    """`a op b` into `out` (`reasoner.values.arith.ARITH`); False when it has no value (a division
    by zero)."""
    if op > OP_MOD:
        if op == OP_POW:
            out[0] = _power(a, b)
        elif op == OP_BAND:
            out[0] = a & b
        elif op == OP_BOR:
            out[0] = a | b
        elif op == OP_BXOR:
            out[0] = a ^ b
        elif op == OP_BSHL:
            out[0] = <int64_t>(<uint64_t>a << (b & 63))
        elif op == OP_BSHR:
            out[0] = a >> (b & 63)
        elif op == OP_BSHRU:
            out[0] = <int64_t>(<uint64_t>a >> (b & 63))
        elif op == OP_LAND:
            out[0] = 1 if (a != 0 and b != 0) else 0
        elif op == OP_LOR:
            out[0] = 1 if (a != 0 or b != 0) else 0
        elif op == OP_LXOR:
            out[0] = 1 if ((a != 0) != (b != 0)) else 0
        elif op == OP_MAX:
            out[0] = a if a > b else b
        elif op == OP_MIN:
            out[0] = a if a < b else b
        elif op == OP_UPOW:
            out[0] = <int64_t>_unsigned_power(<uint64_t>a, <uint64_t>b)
        elif b == 0:  # OP_UDIV, OP_UMOD
            return False
        elif op == OP_UDIV:
            out[0] = <int64_t>(<uint64_t>a // <uint64_t>b)
        else:
            out[0] = <int64_t>(<uint64_t>a % <uint64_t>b)
        return True
    if op == OP_ADD:
        out[0] = <int64_t>(<uint64_t>a + <uint64_t>b)
    elif op == OP_SUB:
        out[0] = <int64_t>(<uint64_t>a - <uint64_t>b)
    elif op == OP_MUL:
        out[0] = <int64_t>(<uint64_t>a * <uint64_t>b)
    elif op == OP_DIV:
        if b == 0:
            return False
        if b == -1:
            out[0] = <int64_t>(<uint64_t>0 - <uint64_t>a)
        else:
            out[0] = a // b
    else:
        if b == 0:
            return False
        if b == -1:
            out[0] = 0
        else:
            out[0] = a % b
    return True


cdef inline bint _compare(int op, int64_t a, int64_t b) noexcept nogil:
    if op == CMP_EQ:
        return a == b
    if op == CMP_NE:
        return a != b
    if op == CMP_LT:
        return a < b
    if op == CMP_LE:
        return a <= b
    if op == CMP_GT:
        return a > b
    return a >= b
