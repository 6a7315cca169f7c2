"""How what names hold flows between statements: joining branches, carrying values round a loop,
and the settings tests (`if args.slot_enabled:`) code runs under."""

from __future__ import annotations

from audits.legality.values import MODEL, TARGET, Taint, has_data


def needs(requirements: dict) -> frozenset:
    """"if:NAME:needed:default" flags: the code runs when setting NAME is on (1) or off (0)."""
    return frozenset(f"if:{name}:{int(need)}:{int(default)}"
                     for name, (need, default) in requirements.items())


def without_loops(taint: Taint) -> Taint:
    """Another function's per-iteration labels mean nothing here."""
    return frozenset(label for label in taint if label[0] not in ("iter", "prev"))


def derived(taint: Taint) -> Taint:
    """A value computed from settings is no longer a setting (`ci == n_chunks - 1` is not a flag
    that is off by default because one of its inputs is)."""
    return frozenset(label for label in taint if label[0] not in ("flag", "mode"))


def join(a: dict, b: dict) -> dict:
    out = dict(a)
    for name, taint in b.items():
        current = out.get(name)
        if current is None:
            out[name] = taint
        elif current is not taint and not taint <= current:
            out[name] = current | taint
    return out


def back_edge(env: dict, entry: dict, lid) -> dict:
    """Values carried into the next iteration: a counter advanced in the loop differs per
    iteration; data kept from this iteration is the previous iteration's data there, and the
    tokens it scored are context, no longer the tokens being scored. Losses and model outputs
    computed in this iteration are an earlier pass's there (a best-so-far kept over checkpoints)."""
    out = {}
    for name, taint in env.items():
        if entry.get(name) == taint:
            out[name] = taint
            continue
        taint = taint | _earlier(taint, lid)
        if has_data(taint) and MODEL not in taint:
            out[name] = (taint - {("iter", lid), TARGET}) | {("prev", lid)}
        else:
            out[name] = (taint - {TARGET}) | {("iter", lid)}
    return out


def _earlier(taint: Taint, lid) -> Taint:
    return frozenset(("earlier", label[1], label[0]) for label in taint
                     if label[0] in ("loss", "out") and label[1] is not None and lid in label[1].loops)
