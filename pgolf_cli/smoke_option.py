"""The `--smoke/--no-smoke` option shared by `pgolf audit` and `pgolf review`."""

from __future__ import annotations

import importlib.util

import click

smoke_option = click.option(
    "--smoke/--no-smoke", default=None,
    help="Import the entry script on CPU in a sandbox, GPU-only modules stubbed "
         "[default: on when torch is installed].")


def resolve_smoke(smoke: bool | None) -> bool:
    """The smoke setting to use: the flag as given, else on exactly when torch is importable.
    Given `--smoke` without torch here, the import runs on the target's Python where that one
    has torch, and is reported as skipped where no Python has it."""
    if smoke is None:
        has_torch = importlib.util.find_spec("torch") is not None
        if not has_torch:
            click.echo("pgolf: no smoke import: torch is not installed (pip install 'pgolf[train]')",
                       err=True)
        return has_torch
    return smoke
