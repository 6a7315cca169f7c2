"""`pgolf`: train, audit, package and review Parameter Golf submissions."""

from __future__ import annotations

import sys

import click

from audits import __version__
from audits.submission import InputError
from pgolf_cli.audit_cmd import audit_command
from pgolf_cli.data_cmd import data_group
from pgolf_cli.demo_cmd import demo_command
from pgolf_cli.package_cmd import package_command
from pgolf_cli.review_cmd import review_command
from pgolf_cli.train_cmd import train_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="pgolf")
@click.option("--debug", is_flag=True, help="Show the traceback of unexpected errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Train, audit, package and review OpenAI Parameter Golf submissions.

    \b
    Exit status: 0 clean, 1 findings at or above the threshold, 2 usage or internal error.
    """
    ctx.obj = {"debug": debug}


cli.add_command(audit_command)
cli.add_command(package_command)
cli.add_command(review_command)
cli.add_command(train_command)
cli.add_command(data_group)
cli.add_command(demo_command)


def main() -> None:
    debug = "--debug" in sys.argv[1:]
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except click.Abort:
        click.echo("pgolf: aborted", err=True)
        sys.exit(2)
    except InputError as exc:
        click.echo(f"pgolf: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("pgolf: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a pgolf bug: one line unless --debug
        if debug:
            raise
        click.echo(f"pgolf: internal error: {type(exc).__name__}: {exc} (rerun with --debug for "
                   "the traceback)", err=True)
        sys.exit(2)
