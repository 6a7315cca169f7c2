"""Which optional trainer modules a run's settings use, so its train_gpt.py carries no other.

A module imported behind a `try: from trainer.x import ... except ModuleNotFoundError:` guard is
optional: the bundle holds it only when a setting switches on what it does. With the record's
settings none of these is reached and its bundle is the record stack alone.
Not part of any bundle: only `pgolf train` and the audit's probe read it.
"""

from __future__ import annotations

from itertools import combinations

# module -> the settings that use it (any one of them on)
OPTIONAL = {
    "gates": ("smear_gate_enabled", "sparse_attn_gate_enabled"),
    "lqer": ("lqer_enabled",),
}


def unreached(cfg) -> frozenset[str]:
    """The optional modules none of whose settings is on in `cfg`."""
    return frozenset(m for m, settings in OPTIONAL.items()
                     if not any(getattr(cfg, s) for s in settings))


def every_leave_out() -> list[frozenset[str]]:
    """Every set of optional modules a bundle can leave out."""
    return [frozenset(c) for n in range(len(OPTIONAL) + 1) for c in combinations(OPTIONAL, n)]


def settings_reaching(leave_out: frozenset[str]) -> dict[str, str]:
    """Settings (environment names) that switch on every optional module a bundle holds."""
    return {s.upper(): "1" for m, settings in OPTIONAL.items() if m not in leave_out
            for s in settings}
