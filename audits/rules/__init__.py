"""Every family of rules; importing this package registers them all. The catalogue keeps each
family where it registers first and its rows in order (the order `pgolf audit --list-rules` and the
compliance summaries show; a legality rule's row states its `place`)."""

from audits.rules import (  # noqa: F401, I001  (the order is the catalogue's)
    layout, metadata, significance, requirements, budgets, record_run, python, smoke, legality, probe, input,
    waivers,
)
