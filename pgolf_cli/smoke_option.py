"""The `--smoke/--no-smoke` option shared by `pgolf audit` and `pgolf review`."""

from __future__ import annotations

import importlib.util

import click

from pgolf_cli.errors import PgolfError

smoke_option = click.option(
    "--smoke/--no-smoke", default=None,
    help="Import the entry script on CPU in a sandbox, GPU-only modules stubbed "
         "[default: on when torch is installed].")


def resolve_smoke(smoke: bool | None) -> bool:
    """The smoke setting to use: the flag as given, else on exactly when torch is importable."""
    has_torch = importlib.util.find_spec("torch") is not None
    if smoke is None:
        if not has_torch:
            click.echo("pgolf: no smoke import: torch is not installed (pip install torch)", err=True)
        return has_torch
    if smoke and not has_torch:
        raise PgolfError("--smoke needs torch in this environment (pip install torch)")
    return smoke
