"""The optimizer changed: torch's SGD, Adam and AdamW swapped for another of them, or for an
update written by hand (an optimizer class of the script's own whose step is
`p.data.add_(p.grad, alpha=-lr)`). What a rule asks of an optimizer step (what it trains on, and
when) does not depend on its update rule."""

from __future__ import annotations

import libcst as cst

from audits.legality.imports import dotted
from rewrites import source

_SWAP = {"SGD": "AdamW", "Adam": "SGD", "AdamW": "SGD"}
_KEPT_KEYWORDS = {"lr", "weight_decay"}
HAND_WRITTEN = '''
class _U(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, *unused, **unused_keywords):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad, alpha=-group["lr"])
'''


def swap(files: dict[str, bytes]) -> dict[str, bytes] | None:
    return source.changed(files, {rel: m.visit(_Swap(_optim_names(m), _plain_torch_import(m) is not None)).code
                                  for rel, m in source.modules(files).items()})


def hand_written(files: dict[str, bytes]) -> dict[str, bytes] | None:
    new = {}
    for rel, m in source.modules(files).items():
        at = _plain_torch_import(m)
        if at is None:
            continue
        rewritten = m.visit(_Replace(_optim_names(m)))
        if rewritten.deep_equals(m):
            continue
        body = list(rewritten.body)
        body[at + 1:at + 1] = cst.parse_module(HAND_WRITTEN).body
        new[rel] = rewritten.with_changes(body=body).code
    return source.changed(files, new)


def _optim_names(m: cst.Module) -> dict[str, str]:
    """Local names bound to torch.optim classes by `from torch.optim import AdamW [as X]`."""
    found = {}
    for stmt in m.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if (isinstance(s, cst.ImportFrom) and dotted(s.module) == "torch.optim"
                        and not isinstance(s.names, cst.ImportStar)):
                    for alias in s.names:
                        local = alias.asname.name.value if alias.asname else alias.name.value
                        found[local] = alias.name.value
    return found


def _optimizer(func, bare: dict[str, str]) -> str | None:
    """SGD / Adam / AdamW where the call is of torch.optim's class, else None."""
    if isinstance(func, cst.Name):
        name = bare.get(func.value)
        return name if name in _SWAP else None
    parts = (dotted(func) or "").split(".")
    return parts[-1] if parts[-1] in _SWAP and len(parts) > 1 and parts[-2] == "optim" else None


class _Swap(cst.CSTTransformer):
    def __init__(self, bare, has_torch: bool):
        self.bare, self.has_torch = bare, has_torch

    def leave_Call(self, original, updated):
        name = _optimizer(original.func, self.bare)
        if name is None or isinstance(updated.func, cst.Name) and not self.has_torch:
            return updated
        target = _SWAP[name]
        func = updated.func
        if isinstance(func, cst.Name):
            func = cst.parse_expression(f"torch.optim.{target}")
        else:
            func = func.with_changes(attr=cst.Name(target))
        args = [a for i, a in enumerate(updated.args)
                if (a.keyword is None and a.star == "" and i < 2)
                or (a.keyword is not None and a.keyword.value in _KEPT_KEYWORDS)
                or a.star]
        return updated.with_changes(func=func, args=args)


class _Replace(cst.CSTTransformer):
    def __init__(self, bare):
        self.bare = bare

    def leave_Call(self, original, updated):
        if _optimizer(original.func, self.bare) is None:
            return updated
        return updated.with_changes(func=cst.Name("_U"))


def _plain_torch_import(m: cst.Module) -> int | None:
    for i, stmt in enumerate(m.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import) and any(a.asname is None and dotted(a.name) == "torch" for a in s.names):
                    return i
    return None
