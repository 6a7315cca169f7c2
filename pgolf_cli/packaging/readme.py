"""README.md of a records folder, and the PR title and body, filled from the template.

Each section is computed from submission.json's figures (themselves read from the logs), the
runs' logs and the audit of the folder; nothing is typed in by hand.
"""

from __future__ import annotations

import importlib.resources
import shlex
import string

from audits import __version__, catalogue
from audits.compliance import condition_results, rule_results, unchecked_lines
from audits.context import AuditOptions
from audits.engine import SubmissionReport
from audits.findings import Severity
from pgolf_cli.packaging.code import ShippedCode
from pgolf_cli.packaging.plot import PLOT_NAME
from pgolf_cli.packaging.request import PackageRequest
from pgolf_cli.packaging.runs import Run
from pgolf_cli.packaging.settings import PER_RUN, changed_settings
from trainer.challenge import CAP_BYTES

TRACK_LABEL = {"10min_16mb": "Record-track (10 minutes, 16 MB)", "non_record_16mb": "Non-record (16 MB)"}
DECODE_COMMAND = ("python -c \"import ast,lzma;s=open('train_gpt.py',encoding='latin-1').read();"
                  "print(lzma.decompress(ast.literal_eval(s[s.index('\\\"'):s.rindex('\\\".encode')+1])"
                  ".encode('latin-1'),format=lzma.FORMAT_RAW,filters=[{'id':lzma.FILTER_LZMA2}]).decode())\"")


def render(request: PackageRequest, runs: list[Run], code: ShippedCode, data: dict,
           report: SubmissionReport, options: AuditOptions) -> str:
    template = string.Template(importlib.resources.files(__package__)
                               .joinpath("README.template.md").read_text(encoding="utf-8"))
    return template.substitute(
        name=_md(request.name.strip()), summary=summary(request, runs, data),
        results_table=results_table(runs, data), significance=significance(report, options),
        plot=PLOT_NAME, reproduce=reproduce(runs), code=code_section(runs, code, data),
        hyperparameters=hyperparameters(runs), compliance=compliance(report, options, runs, code),
        files=files(runs), version=__version__)


def pr_title(request: PackageRequest, data: dict) -> str:
    kind = "Record" if request.track == "10min_16mb" else "Non-record"
    return f"{kind}: {request.name.strip()} (val_bpb {data['val_bpb']:.4f}, {len(data['seeds'])} seeds)"


def pr_body(request: PackageRequest, runs: list[Run], data: dict, report: SubmissionReport,
            options: AuditOptions) -> str:
    verdict = report.verdict(options.strict)
    return "\n\n".join([
        summary(request, runs, data), results_table(runs, data), significance(report, options),
        f"Audited with pgolf {__version__} (target Python {options.python_label}): **{verdict}**. "
        "The folder's README has the compliance section, the reproduction command and the loss "
        "curves; submission.json names the log line of every figure.",
    ]) + "\n"


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or heading."""
    return text.replace("|", "\\|").replace("\n", " ")


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def summary(request: PackageRequest, runs: list[Run], data: dict) -> str:
    rows = data["seed_results"].values()
    seeds = ", ".join(str(s) for s in data["seeds"])
    std = f" (standard deviation {data['val_bpb_std']:.8f})" if "val_bpb_std" in data else ""
    model = max(r["model_bytes"] for r in rows)
    hardware = data.get("hardware", "hardware the logs do not name")
    if isinstance(hardware, dict):
        hardware = "; ".join(f"seed {s}: {h}" for s, h in hardware.items())
    return (f"{TRACK_LABEL[request.track]} submission by {_md(request.author.strip())} "
            f"(@{request.github_id.strip()}): {_runs(len(runs))} of one `train_gpt.py`, seeds {seeds}. "
            f"Mean val_bpb **{data['val_bpb']:.8f}**{std}. The largest artifact is "
            f"{data['bytes_total']:,} bytes of the {CAP_BYTES:,} allowed ({model:,} model bytes + "
            f"{data['bytes_code']:,} code bytes). Training stopped by "
            f"{_seconds(max(r['train_time_ms'] for r in rows))} and evaluation took at most "
            f"{_seconds(max(r['eval_time_ms'] for r in rows))}, on {hardware}.")


def results_table(runs: list[Run], data: dict) -> str:
    out = ["| seed | val_bpb | val_loss | steps | train | eval | model bytes | logged total bytes | log |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for run in runs:
        r = data["seed_results"][str(run.seed)]
        logged = f"{r['artifact_bytes']:,}" if "artifact_bytes" in r else "-"
        out.append(f"| {run.seed} | {r['val_bpb']:.8f} | {r['val_loss']:.8f} | {r['steps']:,} | "
                   f"{_seconds(r['train_time_ms'])} | {_seconds(r['eval_time_ms'])} | "
                   f"{r['model_bytes']:,} | {logged} | [{r['log']}]({r['log']}) |")
    out.append(f"| **mean** | **{data['val_bpb']:.8f}** | {data['val_loss']:.8f} | | | | | | |")
    if "val_bpb_std" in data:
        out.append(f"| std | {data['val_bpb_std']:.8f} | {data['val_loss_std']:.8f} | | | | | | |")
    metric = runs[0].log.score.name
    out.append("")
    out.append(f"val_bpb and val_loss are each log's final `{metric}` line; the logged total is the "
               "run's own `Total submission size` line. The artifact of this folder is model bytes "
               f"+ {data['bytes_code']:,} code bytes (the shipped `train_gpt.py`).")
    return "\n".join(out)


def significance(report: SubmissionReport, options: AuditOptions) -> str:
    if options.baseline is None:
        return ("No previous record was given (`pgolf package --baseline-bpb`), so no significance "
                "test was run.")
    found = [f for f in report.findings if f.rule == "NOT_SIGNIFICANT"]
    if not found:
        return "The non-record track has no significance requirement; no test was run."
    f = found[0]
    head = "Significant" if f.severity == Severity.INFO else "**Not significant**"
    detail = f.message.split(": ", 1)[-1]  # the audit's message is "significant: <figures>"
    return (f"{head} against the previous record (one-sided Welch t-test over the per-seed val_bpb, "
            f"0.005-nat margin): {detail}.")


def reproduce(runs: list[Run]) -> str:
    p = runs[0].log
    world = p.world_size.value if p.world_size is not None else 8
    on_cpu = p.device is not None and p.device.value.startswith("cpu")
    where = "a CPU" if on_cpu else f"{world} GPU{'s' if world != 1 else ''}"
    data = f" with the `{p.dataset.value}` data under `./data/`" if p.dataset is not None else ""
    changed, unknown = changed_settings({k: str(v.value) for k, v in p.hparams.items()})
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in changed.items())
    launcher = ("python train_gpt.py" if world == 1
                else f"torchrun --standalone --nproc_per_node={world} train_gpt.py")
    seeds = " ".join(str(run.seed) for run in runs)
    out = [f"From this folder, on {where}{data}:", "",
           "```bash", "pip install -r requirements.txt",
           f"for SEED in {seeds}; do",
           f"  {env}SEED=$SEED {launcher}",
           "done", "```", ""]
    if changed:
        out.append("The settings before `SEED` are those the logs show differ from the defaults of "
                   "the run's preset (below); every other setting is the script's default.")
    else:
        out.append("Every setting is the script's default, as the logs show (below).")
    if unknown:
        out.append("")
        out.append("The logs also name settings this pgolf does not know (a run of another "
                   "version?), not compared: " + ", ".join(f"`{k}`" for k in unknown) + ".")
    return "\n".join(out)


def code_section(runs: list[Run], code: ShippedCode, data: dict) -> str:
    sha = data["code_sha256"]
    ran = len(runs[0].script)
    if code.form == "plain":
        return (f"`train_gpt.py` is the file that ran, byte for byte: {ran:,} bytes, SHA-256 `{sha}`, "
                "the `code_sha256` every log names. Its size is the code bytes counted in the "
                "artifact.")
    return "\n".join([
        f"`train_gpt.py` ({data['bytes_code']:,} bytes, the code bytes counted in the artifact) is "
        f"the self-extracting form of the file that ran ({ran:,} bytes, SHA-256 `{sha}`, the "
        "`code_sha256` every log names): minified token by token (comments, docstrings and "
        "spaces removed; no expression rewritten, so it needs no newer Python than the original), "
        "compressed with raw LZMA2 and base85-encoded in a two-line `exec` stub. When this folder "
        "was built, pgolf checked that the minified program parses to the same syntax tree as the "
        "file that ran (string statements aside) and that the stub decodes to it exactly.", "",
        "To read the code it runs:", "", "```bash", DECODE_COMMAND, "```",
    ])


def hyperparameters(runs: list[Run]) -> str:
    blocks = {run.seed: {k: str(v.value) for k, v in run.log.hparams.items()} for run in runs}
    first = blocks[runs[0].seed]
    if not first:
        return "The logs have no Hyperparameters block."
    keys = sorted(set().union(*blocks.values()))
    varying = [k for k in keys if k not in PER_RUN and len({b.get(k) for b in blocks.values()}) > 1]
    out = []
    if varying:
        out.append("**These differ between the runs**, so the seeds are not repeats of one "
                   "configuration:")
        out.append("")
        for k in varying:
            out.append(f"- `{k}`: " + ", ".join(f"seed {s}: `{b.get(k, '(absent)')}`"
                                                 for s, b in blocks.items()))
        out.append("")
    out.append(f"The whole block of the seed-{runs[0].seed} log (`seed`, `run_id` and `out_dir` "
               "differ per run); Reproduce sets the ones that differ from the preset's defaults.")
    out.append("")
    out.append("<details><summary>Hyperparameters block</summary>")
    out.append("")
    out.append("| name | value |")
    out.append("|---|---|")
    out.extend(f"| `{k}` | `{_md(first[k])}` |" for k in keys if k in first)
    out.append("")
    out.append("</details>")
    return "\n".join(out)


def compliance(report: SubmissionReport, options: AuditOptions, runs: list[Run],
               code: ShippedCode) -> str:
    results = rule_results(report, options)
    counts = report.counts()
    out = [f"Checked by `pgolf audit` (pgolf {__version__}, target Python {options.python_label}): "
           f"**{report.verdict(options.strict)}**, {counts[Severity.FAIL]} FAIL, "
           f"{counts[Severity.WARN]} WARN.", "",
           "Issue #1017's conditions for a valid evaluation:", "",
           "| condition | result | rules that test it |", "|---|---|---|"]
    for c in condition_results(results):
        out.append(f"| {c.condition} {c.title} | {c.status} | {', '.join(f'`{r}`' for r in c.rules)} |")
    out += ["", "Rules checked:", "", "| rule | result | what it requires | source |", "|---|---|---|---|"]
    for rule in catalogue.RULES:
        if results[rule.id] != "not checked":
            source = rule.sources[0]
            out.append(f"| `{rule.id}` | {results[rule.id]} | {_md(rule.summary)} | "
                       f"[{_md(source.label)}]({source.url}) |")
    lines = unchecked_lines(results, options, version="this version of pgolf")
    if lines:
        out += ["", *lines]
    warnings = [f for f in report.findings if f.severity == Severity.WARN and f.waived is None]
    if warnings:
        out += ["", "Warnings, explained:", ""]
        for f in warnings:
            where = f" (`{f.location()}`)" if f.location() else ""
            out.append(f"- `{f.rule}`{where}: {f.message}. {explain(f.rule, runs, code) or f.hint}")
    return "\n".join(out)


def explain(rule_id: str, runs: list[Run], code: ShippedCode) -> str | None:
    """Why a warning `pgolf package` produces knowingly is expected, and what would remove it;
    None for a warning the packaging does not cause."""
    if rule_id == "FEWER_THAN_3_SEEDS":
        return f"{_runs(len(runs))} packaged; the record track expects at least 3 seeds."
    if rule_id == "ARTIFACT_LITERAL_OVER_CAP" and code.form == "plain":
        return ("The readable file is shipped (`--code-form plain`); the default wrapped form counts "
                "far fewer code bytes.")
    return None


def files(runs: list[Run]) -> str:
    logs = ", ".join(f"`{r.log_name}`" for r in runs)
    return "\n".join([
        "- `train_gpt.py`: the training and evaluation script (see Code).",
        f"- {logs}: the rank-0 log of each run, copied byte for byte from its run folder.",
        "- `submission.json`: the figures above, computed from the logs, with the log line of each "
        "(`sources`) and the audit's verdicts (`compliance`).",
        "- `requirements.txt`: the third-party packages `train_gpt.py` imports.",
        f"- `{PLOT_NAME}`: the loss curves of every seed.",
    ])
