"""`pgolf`: train, audit, package and review Parameter Golf submissions."""

from __future__ import annotations

import importlib
import sys

import click

from audits import __version__

# Each command is imported when it runs: the audit loads libcst and the trainer torch, which
# `pgolf --help` should not wait for. The line is the first sentence of the command's own help
# (a test keeps the two equal).
COMMANDS = {
    "audit": ("pgolf_cli.audit_cmd", "audit_command",
              "Check records folders (or a PR's change, with --base) against every rule."),
    "data": ("pgolf_cli.data_cmd", "data_group",
             "Download the challenge's shards, or make and verify your own."),
    "demo": ("pgolf_cli.demo_cmd", "demo_command",
             "Run the whole loop on the embedded sample corpus, on CPU, in a few minutes: tokenize "
             "it into shards, train the tiny preset for seeds 42 and 314, package the two runs into "
             "an audited non-record records folder, review it, and print a summary."),
    "doctor": ("pgolf_cli.doctor_cmd", "doctor_command",
               "Say what this machine can run: GPU and its bf16 rate, torch and CUDA, the attention "
               "kernels, the smoke import's sandbox and Python 3.10, and the data under --data-dir."),
    "package": ("pgolf_cli.package_cmd", "package_command",
                "Build records/<track>/YYYY-MM-DD_<slug>/ from the RUN_DIRs of `pgolf train`, audit "
                "it and print the PR title and body."),
    "review": ("pgolf_cli.review_cmd", "review_command",
               "Print the audit of PATH (a records folder, or a PR checkout with --base) as a review "
               "comment to paste on the PR."),
    "sweep": ("pgolf_cli.sweep_cmd", "sweep_command",
              "Audit many submissions of a clone in parallel and write their verdicts as a table:"
              " sweep.md, sweep.csv, sweep.json and sweep.html (sortable, filterable) under --out,"
              " with each case's review in reviews/."),
    "train": ("pgolf_cli.train_cmd", "train_command",
              "Train a model with the record recipe and write a run folder."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="pgolf")
@click.option("--debug", is_flag=True, help="Show the traceback of unexpected errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Train, audit, package and review OpenAI Parameter Golf submissions.

    \b
    Exit status: 0 clean, 1 findings at or above the threshold, 2 usage or internal error.
    Shell completion: eval "$(_PGOLF_COMPLETE=bash_source pgolf)" (zsh_source, fish_source).
    """
    ctx.obj = {"debug": debug}



def main() -> None:
    debug = "--debug" in sys.argv[1:]
    try:
        # Outside standalone mode click returns a command's click.exceptions.Exit status instead
        # of raising it; commands themselves return None.
        status = cli.main(standalone_mode=False)
        if isinstance(status, int) and status:
            sys.exit(status)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except click.Abort as exc:  # click's form of Ctrl-C (and of end of input at a prompt)
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo("pgolf: interrupted", err=True)
            sys.exit(130)
        click.echo("pgolf: aborted", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("pgolf: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        from audits.submission import InputError  # loaded already by the command that raised it
        if isinstance(exc, InputError):
            click.echo(f"pgolf: {exc}", err=True)
            sys.exit(2)
        if debug:  # otherwise a pgolf bug is one line
            raise
        click.echo(f"pgolf: internal error: {type(exc).__name__}: {exc} (rerun with --debug for "
                   "the traceback)", err=True)
        sys.exit(2)
