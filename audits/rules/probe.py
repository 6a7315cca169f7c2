"""EVAL_CAUSALITY_PROBE: run pgolf's own evaluation with altered tokens (`pgolf audit --probe`)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util

from audits.findings import Severity
from audits.registry import FAIL, ILLEGAL, Rule, check, found, issue, pgolf, pr, rules
from audits.submission import ENTRY_SCRIPT

# Opt-in (`--probe`), and it vouches for pgolf's own code only, so it lends no verdict to
# #1017's conditions: its messages name the condition a failure breaks. Not a static
# legality rule, so it has no code fixtures: its tests run the probes on illegal evaluations.
RULES = rules(
    Rule("EVAL_CAUSALITY_PROBE", FAIL, "probe",
         "With --probe: pgolf's own evaluation, run again with tokens altered, keeps earlier "
         "losses unchanged (C1), scores each token before any update that saw it (C3), once (C4).",
         (pgolf("reading code can miss a leak that running it with altered tokens shows; the "
                "probe runs pgolf's installed evaluation, never the audited folder's code, so it "
                "vouches only for a folder that ships pgolf's own bundle"),
          issue(1017, "conditions C1, C3, C4"),
          pr(1240, "the same altered-token probe proved SLOT illegal")),
         needs_option="probe", level=ILLEGAL),
)


@functools.lru_cache(maxsize=4)
def bundle_hashes(pinned: tuple[tuple[str, object], ...] | None = None) -> dict[str, str]:
    """sha256 -> description of the train_gpt.py this pgolf version builds, raw, in the records'
    compact self-extracting form and in the packed form `pgolf package` ships: the full bundle,
    or with `pinned` the record bundle for those settings."""
    from trainer.bundle import build_bundle  # the bundler of `pgolf train`
    from trainer.codesize import compact_form, shipped_form
    source = build_bundle(settings=None if pinned is None else dict(pinned))
    name = "the bundle" if pinned is None else "the record bundle"
    return {hashlib.sha256(source.encode()).hexdigest(): name,
            hashlib.sha256(compact_form(source).encode()).hexdigest(): f"{name}'s compact form",
            hashlib.sha256(shipped_form(source)).hexdigest(): f"{name}'s packed form"}


def known_hashes(source: str | None) -> dict[str, tuple[str, tuple[tuple[str, str], ...]]]:
    """sha256 -> (description, probe settings) of the builds a shipped source may be: the full
    bundle, probed with every switch on, and the record bundle for the settings it names as
    pinned (read statically, never run), probed with its pinned switches."""
    from trainer.bundle import pinned_settings
    from trainer.probe import switch_settings
    known = {sha: (what, tuple(sorted(switch_settings().items())))
             for sha, what in bundle_hashes().items()}
    pinned = pinned_settings(source) if source else None
    if pinned is not None:
        settings = tuple(sorted(switch_settings(pinned).items()))
        known.update({sha: (what, settings)
                      for sha, what in bundle_hashes(tuple(sorted(pinned.items()))).items()})
    return known


@functools.cache
def probe_results(settings: tuple[tuple[str, str], ...] = ()) -> tuple:
    """The probes on pgolf's installed evaluation with a tiny random model (a few seconds, CPU),
    with `settings` on. They do not depend on the audited folder, so one run serves every folder
    of an audit that ships a bundle with the same switches."""
    from trainer.probe import self_probe
    return tuple(self_probe(dict(settings)))


@check("EVAL_CAUSALITY_PROBE")
def eval_causality_probe(sub, options):
    """What it checks: only with `--probe`, and only for a folder whose train_gpt.py is the bundle this
    pgolf version builds (same sha256, raw or compact form), pgolf runs its own installed
    evaluation (standard, sliding-window and score-first TTT phases, after a quantized artifact
    roundtrip) on a tiny random model, with the shipped bundle's switches (SmearGate, the attention
    gate, LQER, per-document LoRA TTT, the n-gram tilt: each on for the full bundle, as pinned for
    a record bundle), then again with
    tokens altered. C1: replacing every token after t leaves every loss of targets up to t
    unchanged. C3: replacing token t leaves earlier
    losses unchanged and target t is scored from exactly the distribution of the unaltered run
    (nothing trained on x_t first). C4: every position is scored once, and training uses only
    positions already scored. The folder's code is never executed: only its hash is read.

    Why it matters: issue #1017's conditions are about what the evaluation computes, and a
    dynamic probe shows it directly; PR #1240 proved SLOT illegal with the same altered-token
    test. Reviewers cannot run a submission's 10-minute evaluation, but can run this in seconds.

    Illegal: a TTT loop that trains on a chunk before scoring it (C3 fails: the distribution at t
    changes when x_t changes); a second scoring pass (C4); a model that attends to later tokens
    in its window (C1).

    Legal: pgolf's own score-first TTT: each chunk scored under no_grad, then trained on, the
    last chunk never trained on; its per-document LoRA TTT: each document's chunk scored before
    its adapters' step, SGD phases only on groups of documents already scored.

    Known limits: the probe vouches for pgolf's evaluation code at this version only; a folder
    with any other script is reported as not probed (INFO). The tiny model stands in for the
    trained one: the legality of the procedure does not depend on the weights.
    """
    script = sub.entry_script
    if script is None or not script.data:
        yield found("EVAL_CAUSALITY_PROBE", f"no readable {ENTRY_SCRIPT}: the probes were not run",
                    severity=Severity.INFO, unchecked=True)
        return
    if importlib.util.find_spec("torch") is None:  # `pip install pgolf` without the train extra
        yield found("EVAL_CAUSALITY_PROBE", "the probes were not run: they need torch, which is "
                    "not installed here", severity=Severity.INFO, unchecked=True, file=ENTRY_SCRIPT,
                    hint="pip install 'pgolf[train]'")
        return
    shipped = hashlib.sha256(script.data).hexdigest()
    known = known_hashes(script.source)
    if shipped not in known:
        yield found("EVAL_CAUSALITY_PROBE", f"{ENTRY_SCRIPT} is not the bundle this pgolf version "
                    "builds: the probes vouch only for pgolf's own evaluation, so they were not run",
                    severity=Severity.INFO, unchecked=True, file=ENTRY_SCRIPT,
                    evidence=f"sha256 {shipped[:16]}",
                    hint="Probe a folder made by `pgolf package` with this pgolf version.")
        return
    what, settings = known[shipped]
    results = probe_results(settings)
    failed = [r for r in results if not r.ok]
    for r in failed:
        yield found("EVAL_CAUSALITY_PROBE", f"{r.condition} fails in the {r.phase} phase: {r.detail}",
                    file=ENTRY_SCRIPT,
                    evidence=f"{what} of this pgolf (sha256 {shipped[:16]})",
                    hint="A bug in pgolf's evaluation: report it; do not submit with this version.")
    if not failed:
        phases = sorted({r.phase for r in results})
        yield found("EVAL_CAUSALITY_PROBE", f"{len(results)} probes passed (C1, C3, C4 on "
                    f"{', '.join(phases)})", severity=Severity.INFO, file=ENTRY_SCRIPT,
                    evidence=f"{what} of this pgolf (sha256 {shipped[:16]})")
