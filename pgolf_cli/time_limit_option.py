"""The `--time-limit` option shared by `pgolf audit` and `pgolf review`: the whole audit's bound."""

from __future__ import annotations

import click

DEFAULT_S = 900  # the smoke import takes up to 120 s; the static checks of a record, seconds

time_limit_option = click.option(
    "--time-limit", type=click.FloatRange(min=1), default=DEFAULT_S, show_default=True, metavar="SECONDS",
    help="Stop the audit after this long: the check that runs then is cut short, the rest are not "
         "run, and AUDIT_TIME_LIMIT says which; every finding made before stays in the report.")
