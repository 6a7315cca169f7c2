"""Every family of checks; importing this package registers them all."""

from audits.checks import budgets, layout, metadata, requirements, significance, smoke, valdata  # noqa: F401
