"""The one-sided Welch t-test against independent computations."""

import math

import pytest

from audits.stats import incomplete_beta, one_sided_welch, t_sf


def t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def tail_by_integration(t, df, upper=200.0, n=200000):
    """P(T > t) by Simpson's rule on the density: independent of the incomplete beta."""
    h = (upper - t) / n
    total = t_pdf(t, df) + t_pdf(upper, df)
    for i in range(1, n):
        total += (4 if i % 2 else 2) * t_pdf(t + i * h, df)
    return total * h / 3


@pytest.mark.parametrize("t,df", [(0.5, 2.0), (2.0, 5.0), (3.1, 3.31), (1.0, 30.0), (6.0, 4.0)])
def test_t_tail_matches_numeric_integration(t, df):
    assert t_sf(t, df) == pytest.approx(tail_by_integration(t, df), rel=1e-4, abs=1e-9)


def test_t_tail_symmetry_and_incomplete_beta_edges():
    assert t_sf(0.0, 7) == pytest.approx(0.5)
    assert t_sf(-1.3, 4) == pytest.approx(1 - t_sf(1.3, 4))
    assert incomplete_beta(2, 3, 0) == 0 and incomplete_beta(2, 3, 1) == 1
    assert incomplete_beta(1, 1, 0.3) == pytest.approx(0.3)  # uniform


def test_welch_statistic_and_df_by_hand():
    new, old = [1.0, 1.2, 1.1], [2.0, 2.4, 2.2, 2.3]
    r = one_sided_welch(new, old, margin=0.5)
    v1, v2 = 0.01 / 3, (sum((x - 2.225) ** 2 for x in old) / 3) / 4
    assert r.delta == pytest.approx(2.225 - 1.1)
    assert r.t == pytest.approx((1.125 - 0.5) / math.sqrt(v1 + v2))
    assert r.df == pytest.approx((v1 + v2) ** 2 / (v1 ** 2 / 2 + v2 ** 2 / 3))
    assert r.p == pytest.approx(t_sf(r.t, r.df))


def test_one_sample_against_a_stated_record_and_zero_variance():
    r = one_sided_welch([1.070, 1.071, 1.072], [1.0810], margin=0.003)
    assert r.df == pytest.approx(2) and r.p < 0.01
    same = one_sided_welch([1.0, 1.0], [1.1], margin=0.05)
    assert same.p == 0.0
    with pytest.raises(ValueError):
        one_sided_welch([1.0], [1.1], margin=0.0)
