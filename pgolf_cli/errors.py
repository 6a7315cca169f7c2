"""Errors that end a command with one line on stderr and exit status 2."""

from __future__ import annotations

import click


class PgolfError(click.ClickException):
    """Usage or input problem found after argument parsing: one line, exit 2 (1 means findings)."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"pgolf: {self.format_message()}", err=True)
