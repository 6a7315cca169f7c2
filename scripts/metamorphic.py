"""Audit submissions rewritten without changing what they do, and report what the rewrites change.

    python scripts/metamorphic.py --corpus DIR [--corpus DIR ...] [--fixtures DIR]
                                  [--rewrites NAME,...] [--every N] [--jobs 2] [--json OUT.json]

Every case (a built corpus, `<id>/folder` with `<id>/CASE.json`; or reduced cases, `<name>/`
with `cases.tsv` and `<name>.changes`; or legality fixtures, a script or a folder of scripts) is
rewritten by each rewrite of `scripts/rewrites` (renaming, self-extracting wrappers, a sibling
module, comments, optimizers, loops, a setting's default). The original and each rewritten folder
are audited the way scripts/score_corpus.py audits, `pgolf audit --format json --no-smoke` with
the case's changed paths (the rewrite's new files among them), a process per folder; legality
fixtures with `--only` their family's rules, as their tests audit them. A pair (case, rewrite) is
unchanged when the verdict and the set of blocking rules are the same.

A rewrite that does not apply (no loop to turn) is counted apart; one whose output does not
compile under the Python the original compiles under, or that raises, is a bug of the rewrite and
is counted apart too, never as the audit's. Printed: a table per rewrite, a table per blocking
rule, the changed pairs; with --json, all of it for tools. Exit 1 when a pair changed or a
rewrite or an audit failed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import score_corpus
from rewrites import REWRITES

from audits import catalogue
from audits.registry import LEVELS, PASS
from audits.submission import codesize, load
from audits.submission.gitdiff import parse_changes

LEGALITY = tuple(sorted(r.id for r in catalogue.RULES if r.family == "legality"))
# Model bytes + code bytes against the cap: a rewrite changes the code's bytes by what it is (a
# wrapper, a second file, longer or shorter names), so this rule may move with them (see _size_only).
SIZE_RULE = "ARTIFACT_OVER_CAP"
GRAMMARS = ("python3.12", "python3.13")  # tried, where installed, for a file this Python cannot compile


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    files: tuple[tuple[str, Path], ...]  # (path in the folder, file), where the bytes come from
    folder: str | None  # the folder's path in its repository, for new files' changed-paths lines
    changes: tuple[tuple[str, str], ...] | None  # (status, path) of the PR, or None
    only: tuple[str, ...] = ()  # rules to run (legality fixtures); empty: all


# --- cases ------------------------------------------------------------------------------------

def load_cases(corpora: list[Path], fixtures: list[Path]) -> list[Case]:
    cases = []
    for root in corpora:
        if (root / "cases.tsv").is_file():
            cases += _reduced(root)
        else:
            cases += _built(root)
    for root in fixtures:
        cases += _fixtures(root)
    return cases


def _listing(folder: Path) -> tuple[tuple[str, Path], ...]:
    return tuple((p.relative_to(folder).as_posix(), p) for p in sorted(folder.rglob("*"))
                 if p.is_file() and not p.is_symlink())


def _built(root: Path) -> list[Case]:
    cases = []
    for folder in sorted(p for p in root.glob("*/folder") if p.is_dir()):
        meta_path = folder.parent / "CASE.json"
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        changes = None
        if meta.get("pr_files_in_folder"):
            changes = tuple((f["status"], f"{meta['folder']}/{f['path']}") for f in meta["pr_files_in_folder"]) + \
                tuple((f["status"], f["path"]) for f in meta.get("pr_files_outside_folder", []))
        cases.append(Case(folder.parent.name, _listing(folder), meta.get("folder"), changes))
    return cases


def _reduced(root: Path) -> list[Case]:
    cases = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        listing = _listing(folder)
        changes_file = root / f"{folder.name}.changes"
        changes, where = None, None
        if changes_file.is_file():
            changes = tuple(parse_changes(changes_file.read_text(encoding="utf-8"), str(changes_file)))
            ours = {rel for rel, _ in listing}
            where = next((path[:-len(rel) - 1] for _, path in changes for rel in ours
                          if path.endswith("/" + rel)), None)
        cases.append(Case(f"reduced/{folder.name}", listing, where, changes))
    return cases


def _fixtures(root: Path) -> list[Case]:
    """A script is a fixture, and so is a folder that holds train_gpt.py (a submission of several
    scripts); any other folder groups fixtures."""
    cases = []
    for path in sorted(root.iterdir()):
        if path.suffix == ".py":
            cases.append(Case(f"fixture/{path.stem}", (("train_gpt.py", path),), None, None, LEGALITY))
        elif path.is_dir() and (path / "train_gpt.py").is_file():
            cases.append(Case(f"fixture/{path.name}", _listing(path), None, None, LEGALITY))
        elif path.is_dir():
            cases += _fixtures(path)
    return cases


# --- rewriting --------------------------------------------------------------------------------

@dataclasses.dataclass
class Variant:
    case: str
    rewrite: str  # "" for the original
    status: str  # "audit", "not applicable", "invalid: ...", "error: ..."
    folder: Path | None = None


def _grammar(text: str) -> str | None:
    """The first Python (this one, then GRAMMARS) under which `text` compiles, or None."""
    if _compiles(text, sys.executable):
        return sys.executable
    return next((g for g in GRAMMARS if shutil.which(g) and _compiles(text, g)), None)


def _compiles(text: str, python: str) -> bool:
    if python == sys.executable:
        try:
            compile(text, "<rewritten>", "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    done = subprocess.run([python, "-c", "import sys; compile(sys.stdin.read(), '<rewritten>', 'exec')"],
                          input=text, text=True, capture_output=True)
    return done.returncode == 0


def _invalid(original: dict[str, bytes], rewritten: dict[str, bytes]) -> str | None:
    """Why the rewritten folder is not a valid program, where it is not: a Python file that the
    Python its original compiles under (the entry script's, for a new file) cannot compile."""
    grammars: dict[bytes, str | None] = {}
    for rel, data in sorted(rewritten.items()):
        if not rel.endswith(".py") or original.get(rel) == data:
            continue
        source = original.get(rel, original.get("train_gpt.py"))  # a new file: the entry script's
        if source is None:
            grammar = sys.executable
        else:
            key = hashlib.sha1(source).digest()
            if key not in grammars:
                try:
                    grammars[key] = _grammar(codesize.read_source(source))
                except (UnicodeDecodeError, SyntaxError):
                    grammars[key] = None
            grammar = grammars[key]
        if grammar is None:
            return f"{rel}: its original compiles under no Python here, so the rewrite cannot be checked"
        try:
            text = codesize.read_source(data)
        except (UnicodeDecodeError, SyntaxError) as exc:
            return f"{rel}: unreadable ({exc})"
        if not _compiles(text, grammar):
            return f"{rel}: does not compile under {Path(grammar).name}"
    return None


def _stage(case: Case, rewrites: list[str], work: Path, index: int) -> list[Variant]:
    """The original and each rewrite of one case, laid out under `work` for the audit."""
    files = {rel: path.read_bytes() for rel, path in case.files}
    variants = [_lay_out(case, "", files, files, work / f"{index:04d}-0")]
    for k, name in enumerate(rewrites, 1):
        try:
            rewritten = REWRITES[name](files)
        except Exception as exc:  # a bug of the rewrite: counted, never taken for the audit's
            variants.append(Variant(case.name, name, f"error: {type(exc).__name__}: {exc}"[:300]))
            continue
        if rewritten is None:
            variants.append(Variant(case.name, name, "not applicable"))
            continue
        why = _invalid(files, rewritten)
        if why is not None:
            variants.append(Variant(case.name, name, f"invalid: {why}"))
            continue
        variants.append(_lay_out(case, name, files, rewritten, work / f"{index:04d}-{k}"))
    return variants


def _lay_out(case: Case, rewrite: str, original: dict[str, bytes], files: dict[str, bytes], where: Path) -> Variant:
    folder = where / "folder"
    sources = dict(case.files)
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if original.get(rel) == data and rel in sources:
            try:
                os.link(sources[rel], target)  # the audit only reads; a link saves copying the logs
                continue
            except OSError:
                pass
        target.write_bytes(data)
    if case.changes is not None:
        added = [("A", f"{case.folder}/{rel}") for rel in sorted(set(files) - set(original)) if case.folder]
        (where / "changes").write_text("".join(f"{s}\t{p}\n" for s, p in list(case.changes) + added))
    if case.only:
        (where / "only").write_text(",".join(case.only))
    return Variant(case.name, rewrite, "audit", folder)


def _stage_one(job) -> list[Variant]:
    return _stage(*job)


def _arguments(folder: Path, out: Path) -> list[str]:
    arguments = ["audit", "--format", "json", "--no-smoke"]
    if (folder.parent / "changes").is_file():
        arguments += ["--changed-files", str(folder.parent / "changes")]
    if (folder.parent / "only").is_file():
        arguments += ["--only", (folder.parent / "only").read_text()]
    return arguments + [str(folder)]


# --- comparing --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Outcome:
    verdict: str
    blocking: frozenset[str]
    without_size: tuple[str, frozenset[str]]  # the same as if SIZE_RULE had found nothing

    def key(self) -> tuple[str, frozenset[str]]:
        return self.verdict, self.blocking


def _outcome(path: Path) -> Outcome | None:
    """The verdict and blocking rules of an audit's JSON, or None when there is none."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    subs = report["submissions"]
    blocking = frozenset(f["rule"] for s in subs for f in s["findings"] if f["level"] != PASS)
    apart = [min((f["level"] for f in s["findings"] if f["rule"] != SIZE_RULE), key=LEVELS.index, default=PASS)
             for s in subs]
    return Outcome(" ".join(s["verdict"] for s in subs) or "NONE", blocking,
                   (" ".join(apart) or "NONE", blocking - {SIZE_RULE}))


def _code_bytes(folder: Path) -> int | None:
    """The code bytes the cap counts for the folder, as the audit counts them."""
    try:
        sub = load(folder)
        return sum(codesize.counted_bytes(s.data, s.source) for s in codesize.code_that_runs(sub))
    except Exception:  # a folder the audit could read but this count cannot: not set aside
        return None


def _size_only(base: Outcome, after: Outcome, before_folder: Path, after_folder: Path) -> str | None:
    """Where the pair differs only by SIZE_RULE, and the rewrite moved the code bytes the cap
    counts the way the rule moved (gained with more bytes, lost with fewer), why the difference is
    the rewrite's own (the logs, the rule's other input, are the same files); else None."""
    if base.without_size != after.without_size:
        return None
    gained = SIZE_RULE in after.blocking
    if gained == (SIZE_RULE in base.blocking):
        return None
    before_bytes, after_bytes = _code_bytes(before_folder), _code_bytes(after_folder)
    if before_bytes is None or after_bytes is None or (after_bytes > before_bytes) != gained \
            or after_bytes == before_bytes:
        return None
    return f"{SIZE_RULE} {'gained' if gained else 'lost'}: code bytes {before_bytes:,} -> {after_bytes:,}"


def compare(variants: list[Variant], outcomes: dict[Path, Outcome | None], rewrites: list[str]):
    """The per-pair results, the table per rewrite and the table per blocking rule."""
    by_case = collections.defaultdict(dict)
    for v in variants:
        by_case[v.case][v.rewrite] = v
    pairs = []
    for case, vs in by_case.items():
        base = outcomes.get(vs[""].folder) if vs[""].folder else None
        for name in rewrites:
            v = vs[name]
            row = {"case": case, "rewrite": name}
            if v.status != "audit":
                row["status"] = v.status
            elif base is None:
                row["status"] = "audit failed on the original"
            else:
                after = outcomes.get(v.folder)
                if after is None:
                    row["status"] = "audit failed"
                else:
                    row["status"] = "unchanged" if after.key() == base.key() else "changed"
                    if row["status"] == "changed":
                        why = _size_only(base, after, vs[""].folder, v.folder)
                        if why is not None:
                            row["status"], row["set_aside"] = "unchanged", why
                    row["before"] = {"verdict": base.verdict, "blocking": sorted(base.blocking)}
                    row["after"] = {"verdict": after.verdict, "blocking": sorted(after.blocking)}
            pairs.append(row)
    per_rewrite = {}
    for name in rewrites:
        rows = [p for p in pairs if p["rewrite"] == name]
        count = collections.Counter(_kind(p["status"]) for p in rows)
        per_rewrite[name] = {"pairs": count["unchanged"] + count["changed"], "unchanged": count["unchanged"],
                             "changed": count["changed"], "not applicable": count["not applicable"],
                             "rewrite failed": count["rewrite failed"], "audit failed": count["audit failed"]}
    per_rule = collections.defaultdict(lambda: {"pairs": 0, "kept": 0, "lost": 0, "gained": 0})
    for p in pairs:
        if "before" not in p:
            continue
        before, after = set(p["before"]["blocking"]), set(p["after"]["blocking"])
        if "set_aside" in p:  # counted unchanged: the size rule as it was before the rewrite
            after = (after - {SIZE_RULE}) | (before & {SIZE_RULE})
        for rule in before:
            per_rule[rule]["pairs"] += 1
            per_rule[rule]["kept" if rule in after else "lost"] += 1
        for rule in after - before:
            per_rule[rule]["gained"] += 1
    return pairs, per_rewrite, dict(sorted(per_rule.items()))


def _kind(status: str) -> str:
    if status.startswith(("invalid", "error")):
        return "rewrite failed"
    if status.startswith("audit failed"):
        return "audit failed"
    return status


def markdown(pairs, per_rewrite, per_rule) -> str:
    lines = ["| rewrite | pairs | unchanged | changed | not applicable | rewrite failed | audit failed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    total = collections.Counter()
    for name, c in per_rewrite.items():
        total.update(c)
        lines.append(f"| {name} | {c['pairs']} | {c['unchanged']} | {c['changed']} | {c['not applicable']} | "
                     f"{c['rewrite failed']} | {c['audit failed']} |")
    share = f" ({100 * total['unchanged'] / total['pairs']:.1f}%)" if total["pairs"] else ""
    lines.append(f"| all | {total['pairs']} | {total['unchanged']}{share} | {total['changed']} | "
                 f"{total['not applicable']} | {total['rewrite failed']} | {total['audit failed']} |")
    lines += ["", "| blocking rule | pairs blocking before | kept | lost | gained elsewhere |",
              "|---|---:|---:|---:|---:|"]
    for rule, c in per_rule.items():
        lines.append(f"| {rule} | {c['pairs']} | {c['kept']} | {c['lost']} | {c['gained']} |")
    changed = [p for p in pairs if p["status"] == "changed"]
    if changed:
        lines += ["", "Changed pairs (case, rewrite: verdict and blocking rules before -> after):"]
        for p in changed:
            b, a = p["before"], p["after"]
            lost = sorted(set(b["blocking"]) - set(a["blocking"]))
            gained = sorted(set(a["blocking"]) - set(b["blocking"]))
            lines.append(f"- {p['case']}, {p['rewrite']}: {b['verdict']} -> {a['verdict']}"
                         + (f"; lost {', '.join(lost)}" if lost else "")
                         + (f"; gained {', '.join(gained)}" if gained else ""))
    aside = [p for p in pairs if "set_aside" in p]
    if aside:
        lines += ["", "Counted unchanged: the rule moved with the code bytes the rewrite changed "
                  "(the cap counts them):"]
        lines += [f"- {p['case']}, {p['rewrite']}: {p['set_aside']}" for p in aside]
    broken = [p for p in pairs if _kind(p["status"]) in ("rewrite failed", "audit failed")]
    if broken:
        lines += ["", "Failures (a rewrite's are the harness's to fix; an audit's are the audit's):"]
        lines += [f"- {p['case']}, {p['rewrite']}: {p['status']}" for p in broken]
    return "\n".join(lines) + "\n"


# --- main -------------------------------------------------------------------------------------

def run(cases: list[Case], rewrites: list[str], jobs: int, timeout: float, work: Path):
    """Stage, audit and compare; returns (pairs, per_rewrite, per_rule, audit problems)."""
    jobs_list = [(case, rewrites, work / "cases", i) for i, case in enumerate(cases)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        variants = [v for vs in pool.imap(_stage_one, jobs_list) for v in vs]
    folders = [v.folder for v in variants if v.folder is not None]
    out = work / "json"
    out.mkdir(parents=True, exist_ok=True)
    problems = score_corpus.audit_all(folders, out, jobs, timeout, _arguments)
    names = {v.folder.parent.name: f"{v.case}, {v.rewrite or 'original'}" for v in variants if v.folder is not None}
    problems = [names.get(p.split(":")[0], p.split(":")[0]) + ":" + p.split(":", 1)[1] for p in problems]
    outcomes = {f: _outcome(out / f"{f.parent.name}.json") for f in folders}
    return (*compare(variants, outcomes, rewrites), problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="a built corpus (<id>/folder, <id>/CASE.json) or reduced cases (cases.tsv); repeatable")
    parser.add_argument("--fixtures", type=Path, action="append", default=[],
                        help="legality fixtures (scripts, or folders of scripts); repeatable")
    parser.add_argument("--rewrites", default=",".join(REWRITES),
                        help=f"comma-separated, of: {', '.join(REWRITES)} (default: all)")
    parser.add_argument("--every", type=int, default=1, metavar="N",
                        help="only every N-th case, in order of name (a share of the cases when time is short)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per audit")
    parser.add_argument("--json", type=Path, help="write every pair and both tables here")
    args = parser.parse_args()
    rewrites = [r for r in args.rewrites.split(",") if r]
    unknown = [r for r in rewrites if r not in REWRITES]
    if unknown:
        parser.error(f"unknown rewrite {', '.join(unknown)}; choose from {', '.join(REWRITES)}")
    for root in args.corpus + args.fixtures:
        if not root.is_dir():
            parser.error(f"{root} is not a directory")
    if args.every < 1:
        parser.error("--every takes a whole number of at least 1")
    cases = sorted(load_cases(args.corpus, args.fixtures), key=lambda c: c.name)[::args.every]
    if not cases:
        parser.error("no cases: give --corpus and/or --fixtures")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="metamorphic-") as work:
        pairs, per_rewrite, per_rule, problems = run(cases, rewrites, args.jobs, args.timeout, Path(work))
    seconds = time.monotonic() - start
    cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    sys.stdout.write(markdown(pairs, per_rewrite, per_rule))
    for problem in problems:
        print(problem)
    print(f"{len(cases)} cases x {len(rewrites)} rewrites in {seconds:.1f} s wall, {cpu:.1f} s CPU, "
          f"with {args.jobs} jobs")
    if args.json is not None:
        args.json.write_text(json.dumps({"cases": len(cases), "rewrites": rewrites, "seconds": round(seconds, 1),
                                         "cpu_seconds": round(cpu, 1),
                                         "per_rewrite": per_rewrite, "per_rule": per_rule, "pairs": pairs},
                                        indent=1) + "\n")
    bad = any(p["status"] != "unchanged" and p["status"] != "not applicable" for p in pairs)
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
