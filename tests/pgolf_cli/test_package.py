"""`pgolf package`: from run folders to a records folder that passes its own audit."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import runfolders
from audits.submission.unwrap import unwrap
from audits.submission import codesize
from audits.api import audit
from audits.findings import Severity
from pgolf_cli import packaging
from pgolf_cli.main import cli
from pgolf_cli.packaging import PackageError, PackageRequest, package

DATE = datetime.date(2026, 4, 9)
FOLDER = "records/track_10min_16mb/2026-04-09_SP8192_legal_TTT"


def payload_of(wrapper: str) -> str:
    """The code a wrapper runs, read statically."""
    return unwrap(wrapper, "train_gpt.py", lambda rel: b"").source


def request(runs, tmp_path, **changes) -> PackageRequest:
    fields = dict(runs=tuple(runs), name="SP8192 legal TTT", author="Ada Lovelace",
                  github_id="ada", out=tmp_path / "records", date=DATE, track="10min_16mb")
    fields.update(changes)
    return PackageRequest(**fields)


@pytest.fixture(scope="module")
def packaged(tmp_path_factory):
    """One default (wrapped) package of three seeds, shared by the read-only tests."""
    tmp = tmp_path_factory.mktemp("packaged")
    runs = runfolders.write_runs(tmp / "runs")
    result = package(request(runs, tmp, baseline_bpb=(1.0856,)))
    return runs, result


def test_folder_holds_the_files_of_a_submission(packaged):
    runs, result = packaged
    assert result.folder.name == "2026-04-09_SP8192_legal_TTT"
    assert result.folder.parent.name == "track_10min_16mb"
    assert sorted(p.name for p in result.folder.iterdir()) == [
        "README.md", "loss_curves.png", "requirements.txt", "submission.json", "train_gpt.py",
        "train_seed314.log", "train_seed42.log", "train_seed999.log"]
    for run in runs:
        seed = run.name.removeprefix("run_seed")
        assert (result.folder / f"train_seed{seed}.log").read_bytes() == (run / "train.log").read_bytes()
    assert not [p for p in result.folder.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_own_audit_is_clean(packaged):
    _, result = packaged
    assert not result.failed and result.report.exit_code == 0
    sub = result.report.submissions[0]
    # The wrapped train_gpt.py's payload matches the minified hash every log names.
    assert [f for f in sub.findings if f.severity > Severity.INFO] == []
    assert sub.verdict() == "PASS"


def test_the_one_audit_is_the_audit_of_the_folder_where_it_lies(packaged):
    """The folder is audited once, in staging, as the folder it becomes; auditing it again where it
    lies gives the same findings and the same compliance block as submission.json records."""
    _, result = packaged
    options = packaging.audit_options(request((), result.folder, baseline_bpb=(1.0856,)))
    again = audit([str(result.folder)], options).submissions[0]
    once = result.report.submissions[0]
    assert once.submission.root == result.folder.resolve()
    assert (once.submission.name, once.submission.track, once.submission.track_origin) == \
        (again.submission.name, again.submission.track, again.submission.track_origin)
    assert once.findings == again.findings
    assert packaging.compliance_block(again, options) == result.submission["compliance"]


def test_package_audits_the_folder_once(tmp_path, monkeypatch):
    audited = []
    real = packaging.audit_submission
    monkeypatch.setattr(packaging, "audit_submission", lambda sub, options: audited.append(
        (sub.name, options.only)) or real(sub, options))
    runs = runfolders.write_runs(tmp_path / "runs")
    result = package(request(runs, tmp_path))
    assert audited == [(result.folder.name, frozenset())]
    # choosing the track audits the record-only rules first, on a copy placed on the record track
    audited.clear()
    chosen = package(request(runs, tmp_path / "auto", track="auto"))
    assert audited == [(chosen.folder.name, packaging.RECORD_RULES), (chosen.folder.name, frozenset())]


def test_runs_that_can_be_a_record_go_to_the_record_track_by_themselves(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs")
    result = package(request(runs, tmp_path, track="auto"))
    assert result.folder.parent.name == "track_10min_16mb" and result.track_reason is None
    assert not result.failed and result.pr_title.startswith("Record: ")


def test_runs_that_cannot_be_a_record_go_to_the_non_record_track_saying_why(tmp_path):
    one_gpu = [runfolders.write_run(tmp_path / "runs" / f"s{seed}", seed, gpus=1) for seed in (42, 314, 999)]
    result = package(request(one_gpu, tmp_path, track="auto"))
    assert result.folder.parent.name == "track_non_record_16mb" and not result.failed
    assert result.track_reason.startswith("RECORD_RUN: no 8xH100 run: ")
    assert "1 GPU(s)" in result.track_reason and "\n" not in result.track_reason
    forced = package(request(one_gpu, tmp_path / "forced"))  # --track 10min_16mb
    sub = forced.report.submissions[0]
    assert forced.failed and sub.verdict() == "ILLEGAL" and sub.deciding().rule == "RECORD_RUN"


def test_wrapped_script_is_the_minified_file_that_ran_and_counts_its_own_bytes(packaged):
    runs, result = packaged
    shipped = (result.folder / "train_gpt.py").read_bytes()
    payload = payload_of(codesize.read_source(shipped))
    assert payload == codesize.minify(runfolders.SAMPLE_SCRIPT.decode())
    assert shipped == codesize.shipped_form(runfolders.SAMPLE_SCRIPT.decode())
    data = result.submission
    assert data["bytes_code"] == len(shipped) < len(runfolders.SAMPLE_SCRIPT)
    assert data["code_form"] == "wrapped"
    assert data["code_sha256"] == hashlib.sha256(runfolders.SAMPLE_SCRIPT).hexdigest()


def _import_and_describe(path: Path) -> str:
    """Run a script as a module (not as __main__) in a fresh Python; print what it defines."""
    code = ("import runpy,sys; g = runpy.run_path(sys.argv[1], run_name='shipped'); "
            "print(sorted(k for k in g if not k.startswith('__'))); "
            "print(g['describe'](g['Hyperparameters']())); print(g['bits_per_byte'](2.8, 10, 25))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout


@pytest.mark.slow
def test_wrapped_script_defines_the_same_program_as_the_file_that_ran(packaged):
    runs, result = packaged
    shipped = _import_and_describe(result.folder / "train_gpt.py")
    # The stub's own import (`lzma as L`) is the only extra name.
    assert shipped.replace("'L', ", "") == _import_and_describe(runs[0] / "train_gpt.py")


def test_every_submission_json_figure_is_traceable_to_a_log_line(packaged):
    _, result = packaged
    data = json.loads((result.folder / "submission.json").read_text())
    sources = data["sources"]
    logs = {p.name: p.read_text().splitlines() for p in result.folder.glob("train_seed*.log")}

    def line(ref: str) -> str:
        name, number = ref.split(":")
        return logs[name][int(number) - 1]

    checked = set()
    for seed, row in data["seed_results"].items():
        for key in ("val_bpb", "val_loss", "artifact_bytes", "model_bytes", "train_time_ms",
                    "eval_time_ms", "steps"):
            text = line(sources[f"seed_results.{seed}.{key}"])
            if key in ("val_bpb", "val_loss"):
                assert float(re.search(rf"\b{key}:(\S+)", text).group(1)) == row[key]
            elif key == "eval_time_ms":
                assert float(re.search(r"total_eval_time:(\S+)s", text).group(1)) * 1000 == pytest.approx(row[key])
            elif key == "train_time_ms":
                assert re.search(r"train_time:(\d+)ms", text).group(1) == str(row[key])
            elif key == "steps":
                assert re.search(r"step:(\d+)/", text).group(1) == str(row[key])
            else:
                assert re.search(r": (\d+) bytes", text).group(1) == str(row[key])
            checked.add(f"seed_results.{seed}.{key}")
        assert row["log"] in logs
    for key, ref in (("code_sha256", sources["code_sha256"]), ("seeds", sources["seeds"])):
        refs = ref.split(", ")
        assert len(refs) == 3
        for r, value in zip(refs, data["seeds"] if key == "seeds" else [data[key]] * 3):
            assert line(r).endswith(str(value))
        checked.add(key)
    assert "NVIDIA H100 80GB HBM3" in line(sources["hardware"].split(", ")[0])
    assert data["hardware"] == "8x NVIDIA H100 80GB HBM3"
    assert line(sources["python_version"].split(", ")[0]).startswith(f"Running Python {data['python_version']} ")
    assert line(sources["pytorch_version"].split(", ")[0]) == f"Running PyTorch {data['pytorch_version']}"
    checked |= {"hardware", "python_version", "pytorch_version"}
    rows = data["seed_results"].values()
    bpbs = [r["val_bpb"] for r in rows]
    assert data["val_bpb"] == pytest.approx(sum(bpbs) / 3, abs=1e-8)
    assert data["val_loss"] == pytest.approx(sum(r["val_loss"] for r in rows) / 3, abs=1e-8)
    assert data["val_bpb_std"] == pytest.approx(float(__import__("statistics").stdev(bpbs)), abs=1e-8)
    assert data["bytes_total"] == max(r["model_bytes"] for r in rows) + data["bytes_code"]
    # bytes_code is the shipped file, and the log printed the same size (same compact form)
    code_ref = re.search(r"(train_seed\d+\.log:\d+)", sources["bytes_code"]).group(1)
    assert line(code_ref) == f"Code size (compressed): {data['bytes_code']} bytes"
    checked |= {"val_bpb", "val_loss", "val_bpb_std", "val_loss_std", "bytes_total", "bytes_code"}
    assert checked == set(sources), "a figure in sources was not traced"
    # Everything else is an input (author, name...), the shipped form, or the audit's verdicts.
    figures = {k for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert figures <= checked


def test_compliance_block_is_the_audit_of_the_folder(packaged):
    runs, result = packaged
    compliance = result.submission["compliance"]
    assert compliance["verdict"] == "PASS"
    # The wrapper's payload is the minified source whose hash the logs name.
    assert compliance["rules"]["LOG_SOURCE_MISMATCH"] == "pass"
    assert compliance["rules"]["NOT_SIGNIFICANT"] == "pass"  # the baseline was given
    assert compliance["rules"]["TTT_SCORE_AFTER_ADAPT"] in ("pass", "not checked")
    options = packaging.audit_options(request(runs, result.folder, baseline_bpb=(1.0856,)))
    rerun = audit([str(result.folder)], options).submissions[0]
    assert packaging.compliance_block(rerun, options) == compliance
    assert json.loads((result.folder / "submission.json").read_text())["compliance"] == compliance


def test_readme_has_every_section_and_the_figures(packaged):
    _, result = packaged
    text = (result.folder / "README.md").read_text()
    for heading in ("## Results", "## Reproduce", "## Code", "## Hyperparameters", "## Compliance"):
        assert heading in text
    assert "![Training loss and validation bpb of every seed](loss_curves.png)" in text
    assert f"**{result.submission['val_bpb']:.8f}**" in text
    assert "| 314 | 1.07671540 |" in text
    assert "SEED=$SEED torchrun --standalone --nproc_per_node=8 train_gpt.py" in text
    assert "for SEED in 42 314 999; do" in text
    assert "Significant against the previous record" in text and "p=" in text
    assert "#1017 C3 score before update | pass" in text  # the wrapped script is unwrapped and read
    assert ("| `TRAIN_OVER_BUDGET` | pass | Record track: training takes at most 600 s on every seed. | [challenge "
            "README, Rules, 10 minutes on 8xH100](https://github.com/openai/parameter-golf#readme) |") in text
    # Packaging runs no smoke import, so the smoke rules are not passed (they were before).
    assert ("Not run (option off): `IMPORT_FAIL` (`pgolf audit --smoke`), `IMPORT_STUB_LIMIT` "
            "(`pgolf audit --smoke`), `EVAL_CAUSALITY_PROBE` (`pgolf audit --probe`).") in text
    assert "/tmp" not in text and str(result.folder) not in text


def test_readme_decode_command_prints_the_payload(packaged):
    _, result = packaged
    command = re.search(r"```bash\n(python -c .*)\n```", (result.folder / "README.md").read_text()).group(1)
    done = subprocess.run(command, shell=True, cwd=result.folder, capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout == payload_of(codesize.read_source((result.folder / "train_gpt.py").read_bytes())) + "\n"


def test_plot_is_a_real_png(packaged):
    _, result = packaged
    data = (result.folder / "loss_curves.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 400)


def test_requirements_list_the_scripts_third_party_imports(packaged):
    _, result = packaged
    lines = (result.folder / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == ["brotli", "numpy", "torch"]
    assert any("flash_attn_interface" in line for line in lines if line.startswith("#"))


def test_pr_title_and_body(packaged):
    _, result = packaged
    assert result.pr_title == "Record: SP8192 legal TTT (val_bpb 1.0763, 3 seeds)"
    assert "| 42 | 1.07629352 |" in result.pr_body and "**PASS**" in result.pr_body


def test_plain_form_ships_the_file_that_ran_and_audits_clean(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs", total_counts="uncompressed")
    result = package(request(runs, tmp_path, code_form="plain"))
    assert (result.folder / "train_gpt.py").read_bytes() == runfolders.SAMPLE_SCRIPT
    findings = result.report.submissions[0].findings
    assert [f for f in findings if f.severity > Severity.INFO] == []
    assert result.submission["bytes_code"] == len(runfolders.SAMPLE_SCRIPT)
    # The logged totals counted the readable file, which is what is shipped: they agree.
    for row in result.submission["seed_results"].values():
        assert row["artifact_bytes"] == row["model_bytes"] + len(runfolders.SAMPLE_SCRIPT)


def test_wrapped_form_with_logs_that_counted_the_readable_file(tmp_path):
    """The logged totals count the file that ran; the folder's bytes_total counts what it ships.
    submission.json keeps both, and the audit agrees with it."""
    runs = runfolders.write_runs(tmp_path / "runs", total_counts="uncompressed")
    result = package(request(runs, tmp_path))
    assert not result.failed
    data = result.submission
    for row in data["seed_results"].values():
        assert row["artifact_bytes"] - row["model_bytes"] == len(runfolders.SAMPLE_SCRIPT)
    assert data["bytes_total"] == max(r["model_bytes"] for r in data["seed_results"].values()) + data["bytes_code"]
    rules = [f.rule for f in result.report.submissions[0].findings if f.severity > Severity.INFO]
    assert "SUBMISSION_JSON_MISMATCH" not in rules and "ARTIFACT_OVER_CAP" not in rules


def test_two_seeds_give_an_explained_warning(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs", seeds=(42, 314))
    # two seeds show p < 0.01 only against a record well behind them
    result = package(request(runs, tmp_path, code_form="plain", baseline_bpb=(1.0900,)))
    assert not result.failed
    assert [f.rule for f in result.report.submissions[0].findings if f.severity == Severity.WARN] == [
        "FEWER_THAN_3_SEEDS"]
    assert "2 runs packaged" in result.explanations["FEWER_THAN_3_SEEDS"]


def test_a_failing_audit_keeps_the_folder_and_says_so(tmp_path):
    # 9,662,464 of the 40,540,160 validation tokens: VAL_SUBSET fails in the folder's audit.
    runs = runfolders.write_runs(tmp_path / "runs", val_tokens=9_662_464)
    result = CliRunner().invoke(cli, ["package", *map(str, runs), "--name", "Subset", "--author", "Ada",
                                      "--github-id", "ada", "--out", str(tmp_path / "records"),
                                      "--track", "10min_16mb"])
    assert result.exit_code == 1
    assert "AUDIT FAILED" in result.stdout and "FAIL VAL_SUBSET train_seed314.log:" in result.stdout
    assert "PR body" not in result.stdout
    assert "the folder was kept" in result.stderr
    folders = list((tmp_path / "records" / "track_10min_16mb").iterdir())
    assert len(folders) == 1 and (folders[0] / "submission.json").exists()


def test_cli_prints_the_pr_title_and_body(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["package", *map(str, runs), "--name", "SP8192 legal TTT",
                                      "--author", "Ada", "--github-id", "ada", "--slug", "LegalTTT",
                                      "--out", str(tmp_path / "records")])
    assert result.exit_code == 0, result.output
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    # dated today, the runs do not beat the last record of the shipped leaderboard
    assert f"track_non_record_16mb/{today}_LegalTTT/ (8 files" in result.stdout
    assert "\ntrack: non-record, as the runs cannot be a record (NOT_SIGNIFICANT: " in result.stdout
    assert "audit: PASS (0 FAIL, 0 WARN)" in result.stdout
    assert "PR title:\nNon-record: SP8192 legal TTT (val_bpb 1.0763, 3 seeds)" in result.stdout


def test_force_replaces_an_existing_folder(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs")
    first = package(request(runs, tmp_path))
    (first.folder / "stale.txt").write_text("from before")
    with pytest.raises(PackageError, match="already exists; pass --force"):
        package(request(runs, tmp_path))
    again = package(request(runs, tmp_path, force=True, code_form="plain"))
    assert again.folder == first.folder and not (again.folder / "stale.txt").exists()
    assert (again.folder / "train_gpt.py").read_bytes() == runfolders.SAMPLE_SCRIPT
    assert sorted(p.name for p in again.folder.parent.iterdir()) == [again.folder.name]


def test_interrupted_packaging_leaves_nothing(tmp_path, monkeypatch):
    runs = runfolders.write_runs(tmp_path / "runs")

    def interrupted(sub, options):
        assert (sub.root / "train_gpt.py").exists()  # the folder was half built when it happened
        raise KeyboardInterrupt

    monkeypatch.setattr(packaging, "audit_submission", interrupted)
    with pytest.raises(KeyboardInterrupt):
        package(request(runs, tmp_path))
    assert not (tmp_path / "records").exists()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_an_output_that_is_not_writable_is_refused(tmp_path):
    runs = runfolders.write_runs(tmp_path / "runs")
    locked = tmp_path / "records"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(PackageError, match="is not writable; give another --out"):
            package(request(runs, tmp_path))
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


# ---- bad input: refused with one line on stderr, exit 2, nothing written -------------------

def _tamper(runs, tmp_path, case):
    """Make the run folders bad in one way; return extra CLI arguments."""
    a, b, c = runs
    if case == "empty":
        for p in a.iterdir():
            p.unlink()
    elif case == "different code":
        script = runfolders.SAMPLE_SCRIPT.replace(b"0.022", b"0.030")
        runfolders.write_run(c, 999, script=script)
    elif case == "script is not the one that ran":
        (b / "train_gpt.py").write_bytes(runfolders.SAMPLE_SCRIPT + b"# edited after the run\n")
    elif case == "crashed log":
        lines = (b / "train.log").read_text().splitlines(keepends=True)
        (b / "train.log").write_text("".join(lines[:40]))
    elif case == "crashed while evaluating":  # as a TTT phase that raised: the scores before it stay
        lines = (b / "train.log").read_text().splitlines(keepends=True)
        end = next(i for i, line in enumerate(lines) if line.startswith(("ttt:", "quantized_ttt",
                                                                          "total_eval_time")))
        (b / "train.log").write_text("".join(lines[:end]))
    elif case == "log links outside the run":  # the log is another file of the user's
        (b / "train.log").rename(tmp_path / "elsewhere.log")
        (b / "train.log").symlink_to(tmp_path / "elsewhere.log")
    elif case == "nan loss":
        runfolders.write_run(b, 314, nan_at_step=2000)
    elif case == "train over budget":
        runfolders.write_run(b, 314, train_ms=612_000)
    elif case == "eval over budget":
        runfolders.write_run(b, 314, total_eval_s=640.0)
    elif case == "artifact over cap":
        runfolders.write_run(b, 314, model_bytes=15_999_500)
    elif case == "duplicated seed":
        runfolders.write_run(c, 42)
    elif case == "same run twice":
        return [str(a), str(b), str(a)]
    elif case == "missing run folder":
        return [str(a), str(b), str(tmp_path / "runs" / "run_seed7")]
    elif case == "output exists":
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        (tmp_path / "records" / "track_10min_16mb" / f"{today}_Legal_TTT").mkdir(parents=True)
    elif case == "output is a file":
        (tmp_path / "records").write_text("not a folder")
    elif case == "slug with a slash":
        return ["--slug", "Legal/TTT"]
    elif case == "slug with a space":
        return ["--slug", "Legal TTT"]
    return []


BAD = {
    "empty": "is empty",
    "different code": "ran different code from",
    "script is not the one that ran": "is not the file that ran",
    "crashed log": "without a final val_bpb line",
    "crashed while evaluating": "before its evaluation finished",
    "log links outside the run": "outside the run folder",
    "nan loss": "train_loss is nan",
    "train over budget": "TRAIN_OVER_BUDGET",
    "eval over budget": "EVAL_OVER_BUDGET",
    "artifact over cap": "ARTIFACT_OVER_CAP",
    "duplicated seed": "both ran seed 42",
    "same run twice": "is given twice",
    "missing run folder": "run_seed7: no such folder",
    "output exists": "already exists; pass --force",
    "output is a file": "is a file, not a folder",
    "slug with a slash": "no spaces or slashes",
    "slug with a space": "no spaces or slashes",
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_refused_in_one_line_and_nothing_is_written(tmp_path, case):
    runs = runfolders.write_runs(tmp_path / "runs")
    extra = _tamper(runs, tmp_path, case)
    args = ["package", *map(str, runs), "--name", "Legal TTT", "--author", "Ada",
            "--github-id", "ada", "--out", str(tmp_path / "records"), "--track", "10min_16mb"]
    if case in ("same run twice", "missing run folder"):
        args = ["package", *extra, *args[len(runs) + 1:]]
    elif extra:
        args += extra
    before = runfolders.tree(tmp_path)
    snapshot = {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    message = result.stderr.strip()
    assert "\n" not in message and message.startswith("pgolf: ")
    assert BAD[case] in message
    assert runfolders.tree(tmp_path) == before
    assert snapshot == {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}


def _python310() -> str | None:
    """A Python 3.10 interpreter: $PGOLF_PYTHON310, else python3.10 on PATH, when it runs."""
    candidate = os.environ.get("PGOLF_PYTHON310") or shutil.which("python3.10")
    if not candidate:
        return None
    try:
        done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return candidate if done.returncode == 0 and done.stdout.strip() == "(3, 10)" else None


@pytest.mark.skipif(_python310() is None, reason="no Python 3.10 interpreter (set PGOLF_PYTHON310)")
def test_wrapped_script_compiles_on_python_310(packaged, tmp_path):
    """The sample has `f"{', '.join(names)}"`: legal on 3.10 only while its quotes stay as written."""
    _, result = packaged
    payload = tmp_path / "payload.py"
    payload.write_text(payload_of((result.folder / "train_gpt.py").read_text()))
    for path in (result.folder / "train_gpt.py", payload):
        subprocess.run([_python310(), "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')",
                        str(path)], check=True, timeout=60)


def test_readme_flags_hyperparameters_that_differ_between_runs(tmp_path):
    runs = [runfolders.write_run(tmp_path / "runs" / "a", 42),
            runfolders.write_run(tmp_path / "runs" / "b", 314, extra_hparams={"matrix_lr": "0.03"})]
    result = package(request(runs, tmp_path, track="non_record_16mb", code_form="plain"))
    text = (result.folder / "README.md").read_text()
    assert "- `matrix_lr`: seed 42: `0.022`, seed 314: `0.03`" in text
    assert "`seed`:" not in text and "`run_id`:" not in text  # they differ by design
    assert result.folder.parent.name == "track_non_record_16mb"
    assert "The non-record track has no significance requirement" not in text  # no baseline given
    assert result.pr_title.startswith("Non-record: ")


def test_the_non_record_track_packages_runs_over_the_time_budgets(tmp_path):
    """The non-record track is the unlimited-compute one: a 40-minute run with a 640 s evaluation
    is refused for the record track and packaged for this one, its budgets noted, never blocking."""
    runs = [runfolders.write_run(tmp_path / "runs" / "a", 42, train_ms=2_400_000, total_eval_s=640.0),
            runfolders.write_run(tmp_path / "runs" / "b", 314)]
    with pytest.raises(PackageError, match="OVER_BUDGET"):
        package(request(runs, tmp_path))
    result = package(request(runs, tmp_path, track="non_record_16mb"))
    assert not result.failed
    findings = result.report.submissions[0].findings
    blocking = {f.rule for f in findings if f.severity > Severity.INFO}  # a long run there is noted
    assert not blocking & {"TRAIN_OVER_BUDGET", "EVAL_OVER_BUDGET", "GPTQ_CALIB_AFTER_BUDGET"}
    assert json.loads((result.folder / "submission.json").read_text())["seed_results"]["42"]["steps"] > 0
