"""`reasoner.values.floats`: Soufflé's float operations, each against what C and x86-64 give (the
values below were printed by C programs with glibc, as the plan in
`docs/notes/plan-float.md` records)."""

from __future__ import annotations

import math

import pytest

from reasoner.errors import FloatRefused
from reasoner.values import floats


def bits(value: float) -> int:
    return floats.to_bits(value)


def test_bits_round_trip_and_are_signed() -> None:
    for value in (0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, floats.DBL_MAX, 5e-324):
        assert bits(floats.from_bits(bits(value))) == bits(value)
    assert bits(0.0) == 0
    assert bits(-0.0) == -(1 << 63)
    assert bits(1.0) == 0x3FF0000000000000
    assert bits(-1.0) < 0


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (0.1, "0.10000000000000001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e20, "1e+20"),
        (100000000.0, "100000000"),
        (1 / 3, "0.33333333333333331"),
        (-0.0, "-0"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (floats.DEFAULT_NAN, "-nan"),
        (math.nan, "nan"),
        (floats.DBL_MAX, "1.7976931348623157e+308"),
        (2.0, "2"),
    ],
)
def test_float_text_is_soufflés_output(value: float, text: str) -> None:
    """`max_digits10` (17) significant digits, as Soufflé's `WriteStreamCSV` sets them."""
    assert floats.float_text(value) == text


def test_format_f_is_to_string() -> None:
    assert floats.format_f(1.5) == "1.500000"
    assert floats.format_f(-0.0) == "-0.000000"
    assert floats.format_f(floats.divide(0.0, 0.0)) == "-nan"
    assert floats.format_f(-math.inf) == "-inf"


def test_float_text_reads_back() -> None:
    for value in (0.1 + 0.2, -0.0, 1e300, 5e-324, 1 / 3):
        assert floats.to_bits(float(floats.float_text(value))) == floats.to_bits(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.5", 1.5),
        (" 1.5", 1.5),
        ("\t-2", -2.0),
        ("0x1p3", 8.0),
        ("0X.8", 0.5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("inf", math.inf),
        ("-Infinity", -math.inf),
        ("+3", 3.0),
        ("0", 0.0),
        ("0.0e-999", 0.0),
    ],
)
def test_parse_float_reads_what_stod_reads(text: str, value: float) -> None:
    assert floats.parse_float(text) == value


def test_parse_float_reads_nan_with_its_sign() -> None:
    for text, negative in (("nan", False), ("NaN", False), ("-nan", True)):
        value = floats.parse_float(text)
        assert value is not None and math.isnan(value)
        assert (math.copysign(1.0, value) < 0) == negative


@pytest.mark.parametrize(
    "text", ["1.5 ", "", "abc", "1_000", "nan(1)", "1e400", "1e-400", "0x1p-1074", "--1", "1.5x"]
)
def test_parse_float_refuses_what_stod_refuses_or_loses(text: str) -> None:
    assert floats.parse_float(text) is None


def test_prefix_float_reads_a_prefix() -> None:
    assert floats.prefix_float("1.5abc") == 1.5
    assert floats.prefix_float("  7e") == 7.0
    assert floats.prefix_float("0x") == 0.0
    assert floats.prefix_float("infinite") == math.inf
    assert floats.prefix_float("x1") is None
    assert floats.prefix_float("") is None


def test_compare_is_ieee() -> None:
    assert floats.compare(1.0, 2.0) == -1
    assert floats.compare(2.0, 1.0) == 1
    assert floats.compare(0.0, -0.0) == 0
    assert floats.compare(math.nan, 1.0) == 2
    assert floats.compare(math.nan, math.nan) == 2
    assert floats.compare(-math.inf, math.inf) == -1


def test_divide_by_zero() -> None:
    assert floats.divide(1.0, 0.0) == math.inf
    assert floats.divide(1.0, -0.0) == -math.inf
    assert floats.divide(-1.0, 0.0) == -math.inf
    assert bits(floats.divide(0.0, 0.0)) == floats.DEFAULT_NAN_BITS
    assert floats.divide(1.0, 4.0) == 0.25


def test_power_maps_pythons_errors_to_c() -> None:
    assert bits(floats.power(-8.0, 1.0 / 3)) == floats.DEFAULT_NAN_BITS
    assert floats.power(0.0, -1.0) == math.inf
    assert floats.power(-0.0, -1.0) == -math.inf
    assert floats.power(-0.0, -2.0) == math.inf
    assert floats.power(2.0, 1024.0) == math.inf
    assert floats.power(-2.0, 1025.0) == -math.inf
    assert floats.power(2.0, 0.5) == math.sqrt(2.0)
    assert bits(floats.power(floats.DEFAULT_NAN, 3.0)) == 0x7FF8000000000000  # glibc's
    assert bits(floats.power(floats.DEFAULT_NAN, 2.0)) == floats.DEFAULT_NAN_BITS


def test_max_and_min_keep_a_nan_only_first() -> None:
    assert math.isnan(floats.maximum(math.nan, 1.0))
    assert floats.maximum(1.0, math.nan) == 1.0
    assert math.isnan(floats.minimum(math.nan, 1.0))
    assert floats.minimum(1.0, math.nan) == 1.0
    assert bits(floats.maximum(0.0, -0.0)) == bits(0.0)
    assert bits(floats.maximum(-0.0, 0.0)) == bits(-0.0)


def test_conversions_to_integers_truncate_as_x86_does() -> None:
    assert floats.to_number(-2.9) == -2
    assert floats.to_number(2.9) == 2
    assert floats.to_number(math.nan) == -(1 << 63)
    assert floats.to_number(1e19) == -(1 << 63)
    assert floats.to_unsigned(1e19) == 10000000000000000000 - (1 << 64)
    assert floats.to_unsigned(3.7) == 3
    assert floats.to_unsigned(-1.0) == -1
    assert floats.to_unsigned(math.nan) == -(1 << 63)  # gcc's conversion on x86-64


def test_total_in_any_order() -> None:
    assert floats.total([1.5, 2.25, 4.0], "") == 7.75
    assert floats.total([0.1, 0.2], "") == 0.30000000000000004
    assert floats.total([], "") == 0.0
    assert bits(floats.total([-0.0], "")) == 0
    assert bits(floats.total([-0.0, -0.0, -0.0], "")) == 0
    assert floats.total([2.0**60] * 3, "") == 3 * 2.0**60
    assert floats.total([math.inf, 1.0, 2.0], "") == math.inf
    assert floats.total([math.inf, 0.1, 0.2, 0.3], "") == math.inf
    assert bits(floats.total([math.inf, -math.inf, 1.0], "")) == floats.DEFAULT_NAN_BITS
    assert math.isnan(floats.total([math.nan, 0.1, 0.2, 0.3], ""))


@pytest.mark.parametrize(
    "values",
    [
        [0.1, 0.2, 0.3],
        [math.nan, -math.nan, 1.0],
        [math.nan, math.inf, -math.inf],
        [math.inf, -floats.DBL_MAX, -floats.DBL_MAX],
        [1.0, 2.0**-60, 1.0],
    ],
)
def test_total_refuses_an_order_dependent_sum(values: list[float]) -> None:
    with pytest.raises(FloatRefused, match="order") as refused:
        floats.total(values, "of `p`")
    assert refused.value.code == "unsupported_feature"


def test_mean() -> None:
    assert floats.mean([1.0, 2.0, 4.0], "") == 7 / 3
    assert floats.mean([1.5], "") == 1.5


def test_extremes_start_at_dbl_max_and_skip_nan() -> None:
    assert floats.extreme([math.inf], False, "") == floats.DBL_MAX
    assert floats.extreme([-math.inf], True, "") == -floats.DBL_MAX
    assert floats.extreme([math.nan, 2.0, 1.0], False, "") == 1.0
    assert floats.extreme([math.nan], True, "") == -floats.DBL_MAX
    assert floats.extreme([3.0, -1.0], True, "") == 3.0
    assert bits(floats.extreme([0.0, 1.0], False, "")) == 0
    with pytest.raises(FloatRefused, match="tied"):
        floats.extreme([0.0, -0.0, 1.0], False, "")
