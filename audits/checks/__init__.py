"""Every family of checks; importing this package registers them all."""

from audits.checks import budgets, layout, metadata, pyversion, requirements, significance, valdata  # noqa: F401
