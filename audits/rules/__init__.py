"""Every family of rules; importing this package registers them all, in the catalogue's order
(the order `pgolf audit --list-rules` and the compliance summaries show)."""

from audits.rules import (  # noqa: F401, I001  (the order is the catalogue's)
    layout, metadata, significance, requirements, budgets, record_run, python, smoke, legality, probe, input,
    waivers,
)
