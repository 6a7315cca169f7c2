"""Every family of checks; importing this package registers them all."""

from audits.checks import (  # noqa: F401
    budgets, layout, legality, metadata, probe, pyversion, requirements, significance, smoke, valdata,
)
