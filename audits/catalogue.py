"""The rule catalogue: every rule pgolf knows, with its stable ID, default severity and sources.

This is the registry (like a linter's table of codes). The check for a rule lives in the module of
its family and documents the rule in its docstring; `pgolf audit --explain ID` prints both. IDs are
never reused or renamed.
"""

from __future__ import annotations

import dataclasses

from audits.findings import Severity

REPO = "https://github.com/openai/parameter-golf"


@dataclasses.dataclass(frozen=True)
class Source:
    label: str
    url: str

    def __str__(self) -> str:
        return f"{self.label} <{self.url}>"


def issue(number: int, note: str = "") -> Source:
    label = f"openai/parameter-golf#{number}" + (f" ({note})" if note else "")
    return Source(label, f"{REPO}/issues/{number}")


def pr(number: int, note: str = "") -> Source:
    label = f"PR #{number}" + (f" ({note})" if note else "")
    return Source(label, f"{REPO}/pull/{number}")


def readme(section: str) -> Source:
    return Source(f"challenge README, {section}", f"{REPO}#readme")


def pgolf(reason: str) -> Source:
    """A rule pgolf adds beyond the challenge's text; the reason says why it exists."""
    return Source(f"pgolf: {reason}", f"{REPO}#readme")


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    family: str
    summary: str
    sources: tuple[Source, ...]
    conditions: tuple[str, ...] = ()

    @property
    def primary_source(self) -> str:
        conds = ", ".join(self.conditions)
        first = self.sources[0].label if self.sources else ""
        return f"{conds}; {first}" if conds else first


FAIL, WARN = Severity.FAIL, Severity.WARN
C1, C2, C3, C4 = (f"#1017 C{i}" for i in range(1, 5))

RULES: tuple[Rule, ...] = (
    # --- layout and metadata -------------------------------------------------------------
    Rule("LAYOUT_NOT_SINGLE_FOLDER", FAIL, "layout",
         "The change adds exactly one folder under records/track_10min_16mb/ or "
         "records/track_non_record_16mb/ and touches nothing else.",
         (readme("Submission Process"), pr(1204, "its merge deleted another record"),
          pr(1143), pr(1289), pr(1319))),
    Rule("FOLDER_NAME", WARN, "layout",
         "The folder is named YYYY-MM-DD_description, with a real date and no spaces.",
         (pr(1667, "renamed on review"),)),
    Rule("MISSING_FILES", FAIL, "layout",
         "README.md, submission.json, at least one train log and the entry script are present.",
         (readme("Submission Process"),)),
    Rule("SUBMISSION_JSON_INVALID", FAIL, "metadata",
         "submission.json parses as an object with author, github_id, name, date and val_bpb.",
         (readme("Submission Process"),)),
    Rule("SUBMISSION_JSON_MISMATCH", FAIL, "metadata",
         "Claimed val_bpb, per-seed results and byte counts agree with what the logs show.",
         (readme("Submission Process"),)),
    Rule("LOG_SOURCE_MISMATCH", FAIL, "metadata",
         "A log that embeds or names its script's source matches the shipped script.",
         (pgolf("a log whose embedded source differs from the shipped file was produced by other "
                "code, so its numbers do not support this submission"),
          readme("Submission Process"))),
    Rule("FEWER_THAN_3_SEEDS", WARN, "metadata",
         "Record track: at least 3 runs with distinct seeds, one log each, no duplicated log.",
         (readme("Submission Process"),)),
    Rule("NOT_SIGNIFICANT", WARN, "metadata",
         "Record track: the mean improvement over the stated previous record is at least "
         "0.005 nats at p < 0.01 (one-sided Welch t-test over the per-seed values).",
         (readme("Submission Process"), pr(1902, "the looser p < 0.25 progression"))),
    Rule("MISSING_REQUIREMENT", WARN, "metadata",
         "Every third-party import is in the reference environment or in the folder's "
         "requirements.txt.",
         (readme("FAQ, Can I import XYZ package"),)),
    # --- budgets --------------------------------------------------------------------------
    Rule("ARTIFACT_OVER_CAP", FAIL, "budgets",
         "Compressed model bytes + code bytes stay at or under 16,000,000 on every seed (code "
         "counted as the smallest self-extracting form pgolf can build).",
         (readme("FAQ, artifact size"), pr(1530, "compressed-code counting merged"), pr(1399),
          pr(1959))),
    Rule("ARTIFACT_LITERAL_OVER_CAP", WARN, "budgets",
         "Model bytes + raw bytes of every shipped code file stay at or under 16,000,000.",
         (readme("FAQ, artifact size"),)),
    Rule("TRAIN_OVER_BUDGET", FAIL, "budgets",
         "Training takes at most 600 s on every seed.",
         (readme("Rules, 10 minutes on 8xH100"),)),
    Rule("GPTQ_CALIB_AFTER_BUDGET", FAIL, "budgets",
         "Quantization calibration that reads training data finishes inside the 600 s window.",
         (issue(677), pr(593), pr(1868, "compliance re-run with a reserve"))),
    Rule("EVAL_OVER_BUDGET", FAIL, "budgets",
         "Evaluation takes at most 600 s on every seed.",
         (readme("FAQ, evaluation time"), pr(1399))),
    # --- python and environment ------------------------------------------------------------
    Rule("PY_SYNTAX_TOO_NEW", FAIL, "python",
         "No syntax newer than the target Python in any shipped .py file, after unwrapping.",
         (issue(1591, "records that need Python 3.12"), pr(1532))),
    Rule("PY_STDLIB_TOO_NEW", WARN, "python",
         "No standard-library API newer than the target Python.",
         (issue(1591),)),
    Rule("PY_SYNTAX_ERROR", FAIL, "python",
         "Every shipped .py file, after unwrapping, is valid Python in some version.",
         (pgolf("a file that no Python compiles cannot run; it is reported apart from "
                "PY_SYNTAX_TOO_NEW because the fix is different"),
          readme("Submission Process, must compile and run"))),
    Rule("WRAPPER_UNREADABLE", FAIL, "python",
         "The payload of a self-extracting script decodes statically, within the size bound.",
         (pgolf("a payload that is corrupt, truncated, too large or built by code pgolf will not run "
                "cannot be audited, so every other check would pass on code nobody read"),)),
    Rule("IMPORT_FAIL", FAIL, "python",
         "The script imports on a CPU box with GPU-only modules stubbed.",
         (readme("Submission Process, must compile and run"),)),
    Rule("IMPORT_STUB_LIMIT", WARN, "python",
         "The import failed only because of a stubbed GPU-only module.",
         (readme("Submission Process, must compile and run"),)),
    # --- legality of training and evaluation ------------------------------------------------
    Rule("TTT_SCORE_AFTER_ADAPT", FAIL, "legality",
         "Tokens are scored before any update that used them, and never scored again after.",
         (readme("FAQ, test-time training"), issue(402), issue(677), pr(991)), (C3,)),
    Rule("PREQUANT_TTT_ON_VAL", FAIL, "legality",
         "No fine-tuning on validation tokens before they are scored.",
         (pr(1376), issue(677), pr(1902)), (C3,)),
    Rule("VAL_DATA_IN_TRAINING", FAIL, "legality",
         "Validation tokens never reach training or any state built before evaluation.",
         (readme("FAQ, validation data"),)),
    Rule("PAID_PREFIX", FAIL, "legality",
         "Validation tokens are not stored in the artifact.",
         (readme("FAQ, paid prefix"), pr(168), pr(262)), (C1,)),
    Rule("GPTQ_CALIB_ON_VAL", FAIL, "legality",
         "Quantization calibration never reads validation tokens.",
         (pr(728), pr(1919), pr(1019, "self-generated calibration is legal")), (C1,)),
    Rule("SLOT", FAIL, "legality",
         "No per-window parameters optimized on the window's own targets and then used to "
         "score them.",
         (pr(1240, "proof of the violation"), issue(1336)), (C1, C3)),
    Rule("ETLB", FAIL, "legality",
         "No eval-time logit bias fitted on the tokens it is applied to.",
         (pr(1399),), (C1, C3)),
    Rule("NGRAM_TARGET_IN_KEY", FAIL, "legality",
         "No hashed n-gram cache whose key includes the token being scored.",
         (pr(779, "ruled disallowed"), issue(677), pr(1514, "the legal renormalized tilt")), (C2,)),
    Rule("NGRAM_NOT_NORMALIZED", FAIL, "legality",
         "Cache or n-gram mixtures give a distribution that sums to 1 over the vocabulary.",
         (pr(972), pr(978)), (C2,)),
    Rule("TWO_PASS_RESCORE", FAIL, "legality",
         "Each token is scored once; no second pass and no picking the better pass.",
         (pr(846), pr(853), pr(959), pr(659)), (C4,)),
    Rule("BYTE_MIXTURE_NOT_NORMALIZED", FAIL, "legality",
         "Byte-level model mixtures still give a normalized distribution over tokens.",
         (issue(1872), pr(1902)), (C2,)),
    Rule("REALIZED_TOKEN_GATE", FAIL, "legality",
         "No mixture or tilt whose gate reads the token being scored.",
         (pr(1967), pr(2018)), (C1,)),
    Rule("BOS_CROSS_DOC_LEAK", FAIL, "legality",
         "Previous-token mixing paths are masked at document starts (BOS).",
         (pr(1797, "audit"), pr(1851, "fix")), (C1,)),
    Rule("BPB_BYTE_ACCOUNTING", WARN, "legality",
         "Bytes per token come from the tokenizer's pieces (leading space, byte fallback, "
         "control tokens handled).",
         (issue(1017, "section V"), pr(1806, "Scylla record removed"), issue(897))),
    Rule("VAL_SUBSET", FAIL, "legality",
         "Evaluation covers every validation shard and token.",
         (pr(1854, "scored 17% of the set"), issue(1017))),
    Rule("TRAIN_DATA_AT_EVAL", FAIL, "legality",
         "Training shards are not read during evaluation.",
         (readme("FAQ, evaluation"),)),
    Rule("NETWORK_AT_EVAL", FAIL, "legality",
         "No downloads or network calls during evaluation.",
         (readme("FAQ, evaluation"),)),
    # --- dynamic probes (pgolf's own) --------------------------------------------------------
    # Opt-in (`--probe`), and it vouches for pgolf's own code only, so it lends no verdict to
    # #1017's conditions: its messages name the condition a failure breaks. Not a static
    # legality rule, so it has no code fixtures: its tests run the probes on illegal evaluations.
    Rule("EVAL_CAUSALITY_PROBE", FAIL, "probe",
         "With --probe: pgolf's own evaluation, run again with tokens altered, keeps earlier "
         "losses unchanged (C1), scores each token before any update that saw it (C3), once (C4).",
         (pgolf("reading code can miss a leak that running it with altered tokens shows; the "
                "probe runs pgolf's installed evaluation, never the audited folder's code, so it "
                "vouches only for a folder that ships pgolf's own bundle"),
          issue(1017, "conditions C1, C3, C4"),
          pr(1240, "the same altered-token probe proved SLOT illegal"))),
    # --- input hygiene (pgolf's own) ---------------------------------------------------------
    Rule("FILE_UNREADABLE", WARN, "input",
         "Every file pgolf has to read is text of a sane size.",
         (pgolf("a binary, oversized or undecodable file where text is expected cannot be "
                "audited, so the report says so instead of guessing"),)),
    Rule("SYMLINK_OUTSIDE", FAIL, "input",
         "No symbolic link points outside the submission folder.",
         (pgolf("a link out of the folder ships something the folder does not contain; pgolf "
                "never follows it"),)),
    Rule("BAD_FILENAME", WARN, "input",
         "File names have no control characters, newlines or spaces.",
         (pgolf("such names break git tooling and review"),)),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def get(rule_id: str) -> Rule:
    return BY_ID[rule_id]
