"""The one-sided Welch t-test the challenge asks for, without a statistics dependency."""

from __future__ import annotations

import dataclasses
import math


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


def mean(values) -> float:
    return sum(values) / len(values)


def sample_var(values) -> float:
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


@dataclasses.dataclass(frozen=True)
class Improvement:
    """Result of testing `mean(new) < mean(old) - margin`."""

    delta: float  # mean(old) - mean(new); positive is better
    t: float
    df: float
    p: float


def one_sided_welch(new: list[float], old: list[float], margin: float) -> Improvement:
    """Test H1: the new mean is below the old mean by more than `margin` (lower is better).

    With a single old value (a stated previous record), this is the one-sample t-test of `new`
    against `old - margin`. With identical new values the variance is zero: p is 0 or 1.
    """
    if len(new) < 2:
        raise ValueError("a t-test needs at least 2 values")
    delta = mean(old) - mean(new)
    se2 = sample_var(new) / len(new)
    df_num_terms = [(sample_var(new) / len(new), len(new))]
    if len(old) >= 2:
        se2 += sample_var(old) / len(old)
        df_num_terms.append((sample_var(old) / len(old), len(old)))
    if se2 == 0.0:
        return Improvement(delta, math.inf if delta > margin else -math.inf, math.inf,
                           0.0 if delta > margin else 1.0)
    t = (delta - margin) / math.sqrt(se2)
    denom = sum(v * v / (n - 1) for v, n in df_num_terms if v > 0)
    df = se2 * se2 / denom if denom > 0 else float(len(new) - 1)
    return Improvement(delta, t, df, t_sf(t, df))
