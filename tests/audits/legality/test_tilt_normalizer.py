"""The closed form of a one-token tilt's normaliser is recognised in its spellings, and sums that
only look like it are not."""

from __future__ import annotations

import libcst as cst
import pytest

from audits.legality import operators


def _recognised(expression: str) -> bool:
    module = cst.parse_module("")
    node = cst.parse_expression(expression)
    return bool(operators.tilt_normalizer(node, lambda n: module.code_for_node(n).strip()))


@pytest.mark.parametrize("expression", [
    "1.0 + p_hint * (betas.exp() - 1.0)",
    "(betas.exp() - 1) * p_hint + 1",
    "1 + p * torch.expm1(beta)",
    "1 - p + p * w",
    "p.double() * boost - p.double() + 1",
])
def test_closed_forms(expression):
    assert _recognised(expression)


@pytest.mark.parametrize("expression", [
    "1 + p * beta",          # no (w - 1): not the sum of p_v * w ** [v == hint]
    "1 - q + p * w",         # the subtracted mass is not the boosted one
    "2 + p * (w - 1)",       # the untouched mass is not 1
    "1 + p + q * (w - 1)",
])
def test_lookalikes(expression):
    assert not _recognised(expression)
