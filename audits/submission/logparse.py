"""Parse Parameter Golf train logs into figures, each tied to the line it came from.

The logs drift a lot between records: three step-line styles (one with minutes instead of
milliseconds, one with a unix-timestamp prefix), metric lines with `:` or `=`, several size lines,
a `Hyperparameters:` block, sometimes the whole script source at the top. The parser reads each
line once against a table of line families and never raises on any text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re

from trainer.challenge import TRAIN_BUDGET_MS

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"

_TIMESTAMP = re.compile(r"^\d{9,11}(?:\.\d+)?\s+")
_SEPARATOR = re.compile(r"^={20,}\s*$")
_SOURCE_MARKER = re.compile(r"^\[embedded source removed: (\d+) lines, sha256/16 ([0-9a-f]{16})\]")
_CODE_SHA = re.compile(r"^code_sha256:\s*([0-9a-f]{64})\b")
_CODE_MINIFIED_SHA = re.compile(r"^code_minified_sha256:\s*([0-9a-f]{64})\b")

_STEP_OLD = re.compile(r"^step:(\d+)/(\d+)\s+(.*)$")
_STEP_NEW = re.compile(r"^(\d+)/(\d+)\s+(.*)$")
# Every pattern here runs in time linear in its line: no two parts of one may take the same run of
# characters in many ways (a field name starts a word, not at each of its letters; a name ends on
# a non-space before optional spaces), since a log is the author's text.
_FIELD = re.compile(rf"(?<![A-Za-z_/])([A-Za-z_/]+)[:=]\s*({NUM})(ms|m|s)?\b")

_METRIC = re.compile(rf"^(?P<name>(?:.*?\S)??)\s*\bval_loss[:=]\s*(?P<loss>{NUM})"
                     rf"\s+val_bpb[:=]\s*(?P<bpb>{NUM})(?P<rest>.*)$")
_EVAL_TIME = re.compile(rf"\b(?:eval_)?time:\s*({NUM})ms")  # a scored line's own time
_ELAPSED = re.compile(rf"\belapsed=\s*({NUM})s")

_STOP = re.compile(r"^stopping_early:\s*wallclock_cap\s+train_time:\s*(\d+)ms\s+step:\s*(\d+)/(\d+)")
_RESERVE = re.compile(rf"^gptq:reserving\s+({NUM})\s*(ms|s)\b(?:.*?effective=(\d+)ms(?=\s*$))?", re.I)
_HESSIANS = re.compile(rf"^GPTQ:collected\s+(\d+)\s+Hessians\s+in\s+({NUM})s", re.I)
_CALIBRATED = re.compile(rf"^gptq:calibrated\s+(\d+)\s+layers\s+in\s+({NUM})s", re.I)
_HESSIANS_AR = re.compile(r"^gptq:collected hessians for (\d+) layers(.*)$", re.I)
_SELF_GEN = re.compile(r"autoregressive|self[- ]?gen", re.I)
_SERIALIZED = re.compile(r"^Serialized model(?:\s+(?=[^\s:])([^:]+))?:\s*(\d+)\s*bytes")
# `Total submission size int6+brotli: N bytes`, and the method named before the word as well
# (`Total mixed submission: N bytes`).
_TOTAL = re.compile(r"^Total\s+(?:(\w[\w+-]*)\s+)?submission(?:\s+size)?(?:\s+(?=[^\s:])([^:]+))?:\s*(\d+)\s*bytes")
# Size lines of other shapes: `Artifact size: 15,762,406 bytes` (`quant:int5 artifact size: N
# bytes`), the compressed model as the GDN records' submission.json counts it (code apart); and a
# size followed by the total on one line (`Artifact: 15103390 bytes, code: 61581 bytes, total:
# 15164971 bytes`, `Serialized zstd-22: 15915703 bytes  Total: 15965664 bytes`), the log's total.
_ARTIFACT_SIZE = re.compile(r"^(?:(\S+)\s+)?artifact size:\s*(\d{1,3}(?:,\d{3})+|\d+)\s*bytes\b", re.I)
_SIZE_THEN_TOTAL = re.compile(r"^([A-Za-z][\w+\-. ]*?):\s*\d+\s*bytes\b.*?\btotal:\s*(\d+)\s*bytes\b", re.I)
_CODE = re.compile(r"^Code size(?:\s*\((compressed|uncompressed)\))?:\s*(\d+)\s*bytes")
_TOTAL_EVAL = re.compile(rf"^total_eval_time:\s*({NUM})s")
_VAL_LOADER = re.compile(r"^val_loader:shards pattern=(\S+)\s+tokens:(\d+)")
_VAL_TOKENS = re.compile(r"^val_tokens:\s*(\d+)")
_VALIDATION_TOKENS = re.compile(r"^Validation tokens:\s*(\d{1,3}(?:,\d{3})+|\d+)\s*$")
_TRAIN_LOADER = re.compile(r"^train_loader:dataset:(\S+)\s+train_shards:(\d+)")
_TRAIN_SHARDS = re.compile(r"^train_shards:\s*(\d+)")
_SEED = re.compile(r"^seed:\s*(-?\d+)\s*$")
_HPARAM = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*):\s?(.*)$")
# A feature the run announces as on (`ngram_cache:enabled orders=2-9`): its setting was turned on.
_ENABLED = re.compile(r"^([a-z][a-z0-9_]*):enabled\b")
_PYTHON = re.compile(r"^Running Python (\d+\.\d+\.\d+)")
_TORCH = re.compile(r"^Running PyTorch (\S+)")
_GPU = re.compile(r"^\|\s+\d+\s+(NVIDIA [A-Za-z0-9 ]+?)\s{2,}")
_PEAK = re.compile(r"^peak memory allocated:\s*(\d+)\s*MiB(?:\s+reserved:\s*(\d+)\s*MiB)?")
_WORLD = re.compile(r"^world_size:(\d+)")
_DEVICE = re.compile(r"^device: (.+) x(\d+)$")  # pgolf's trainer: "device: NVIDIA H200 x4"
_DATASET = re.compile(r"fineweb10B_(sp\d+|byte\d+)(_[A-Za-z0-9_]*caseops[A-Za-z0-9_]*)?", re.I)

_DIAGNOSTIC_NAMES = ("pre-quant", "pre_quant", "prequant", "diagnostic", "post_ema", "post-ema")
_PYTHON_START = re.compile(r'^(?:import |from |"""|\'\'\'|#|"|\')')


@dataclasses.dataclass(frozen=True)
class Value:
    """A figure read from the log, with the 1-based line number and the line's text."""

    value: float | int | str
    line: int
    text: str


@dataclasses.dataclass(frozen=True)
class Step:
    step: int
    total: int
    train_loss: float | None
    train_time_ms: float | None
    line: int
    approx: bool = False  # True when the log printed minutes, not milliseconds


@dataclasses.dataclass(frozen=True)
class Metric:
    """A `val_loss ... val_bpb ...` line. `kind` is step_val, diagnostic, scored or progress."""

    name: str
    kind: str
    val_loss: float
    val_bpb: float
    decimals: int
    eval_time_ms: float | None
    line: int
    text: str

    @property
    def base(self) -> str:
        return self.name[: -len("_exact")] if self.name.endswith("_exact") else self.name


@dataclasses.dataclass(frozen=True)
class EmbeddedSource:
    """Source code a log carries (or the marker that replaced it): its hash and where it sits."""

    sha256: str  # full hex digest, or a 16-hex prefix when only the marker survived
    lines: int
    line: int
    normalized_sha256: str | None = None
    # A block with no closing separator runs into the log's own lines: its end is not known, so it
    # is kept whole and compared as a prefix (`starts_with`).
    open_ended: tuple[str, ...] | None = None

    def starts_with(self, text: str) -> bool:
        """Whether an open-ended block begins with `text`, line for line."""
        wanted = text.rstrip("\n").split("\n")
        return self.open_ended is not None and list(self.open_ended[:len(wanted)]) == wanted


@dataclasses.dataclass
class ParsedLog:
    path: str
    line_count: int = 0
    seed: Value | None = None
    hparams: dict[str, Value] = dataclasses.field(default_factory=dict)
    steps: list[Step] = dataclasses.field(default_factory=list)
    metrics: list[Metric] = dataclasses.field(default_factory=list)
    stop: Value | None = None  # value = train_time_ms; step in stop_step
    val_step_time: Value | None = None  # train_time_ms of the last step's validation line
    stop_step: int | None = None
    gptq_reserve_ms: Value | None = None
    hessians: Value | None = None  # value = seconds (None when the log gives no time)
    calibration: str | None = None  # "train", "self-generated" or "validation"
    raw_model_bytes: Value | None = None
    model_bytes: Value | None = None  # the compressed artifact's model part
    totals: list[tuple[str | None, Value]] = dataclasses.field(default_factory=list)  # (method, bytes)
    code_bytes: Value | None = None
    code_bytes_compressed: Value | None = None
    code_bytes_uncompressed: Value | None = None
    total_eval_time_ms: Value | None = None
    val_tokens: Value | None = None
    train_shards: Value | None = None
    dataset: Value | None = None
    embedded_source: EmbeddedSource | None = None
    code_sha256: Value | None = None
    code_minified_sha256: Value | None = None  # pgolf's logs: the minified form a wrapper ships
    python_version: Value | None = None
    torch_version: Value | None = None
    gpus: list[Value] = dataclasses.field(default_factory=list)
    world_size: Value | None = None
    device: Value | None = None  # pgolf's logs: the device name, "cpu (x86_64)" on a CPU
    peak_memory_mib: Value | None = None

    # ---- derived figures --------------------------------------------------------------------
    @property
    def score(self) -> Metric | None:
        """The final score: the last scored metric, in its `_exact` form when the log has one."""
        scored = [m for m in self.metrics if m.kind == "scored"]
        if not scored:
            return None
        last = scored[-1]
        exact = [m for m in scored if m.base == last.base and m.name.endswith("_exact")]
        return exact[-1] if exact and not last.name.endswith("_exact") else last

    @property
    def train_time_ms(self) -> Value | None:
        if self.stop is not None:
            return self.stop
        timed = [s for s in self.steps if s.train_time_ms is not None]
        if not timed:
            # A log that prints no training step (only `step:N/M val_loss:... train_time:...`
            # every few thousand steps) still times its training there.
            return self.val_step_time
        last = timed[-1]
        return Value(last.train_time_ms, last.line, f"step {last.step}/{last.total}")

    @property
    def step_count(self) -> int | None:
        if self.stop_step is not None:
            return self.stop_step
        return self.steps[-1].step if self.steps else None

    @property
    def artifact_bytes(self) -> Value | None:
        """The log's own total for the compressed artifact (the last total that names a method)."""
        named = [value for method, value in self.totals if method]
        return named[-1] if named else None

    @property
    def eval_phases(self) -> list[Metric]:
        """Scored metrics with their own eval time, one per metric name (`_exact` twins merged)."""
        seen: dict[str, Metric] = {}
        for m in self.metrics:
            if m.kind == "scored" and m.eval_time_ms is not None and m.base not in seen:
                seen[m.base] = m
        return list(seen.values())

    @property
    def eval_time_ms(self) -> Value | None:
        if self.total_eval_time_ms is not None:
            return self.total_eval_time_ms
        phases = self.eval_phases
        if not phases:
            return None
        total = sum(m.eval_time_ms for m in phases)
        names = " + ".join(f"{m.base} {m.eval_time_ms:.0f}ms" for m in phases)
        return Value(total, phases[-1].line, f"sum of eval phases: {names}")

    @property
    def completed(self) -> bool:
        """A run that reached a final score; a crashed or cut log has none."""
        return self.score is not None

    @property
    def looks_like_log(self) -> bool:
        return bool(self.steps or self.metrics or self.stop or self.hparams or self.totals
                    or self.embedded_source)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text and "e" not in text.lower() else 0


def _classify(name: str) -> str:
    if _STEP_OLD.match(name + " ") or re.match(r"^\d+/\d+$", name) or name.startswith("step:"):
        return "step_val"
    lowered = name.lower()
    if any(tag in lowered for tag in _DIAGNOSTIC_NAMES):
        return "diagnostic"
    if ":" in name.split()[0]:
        return "progress"
    return "scored"


def _parse_step(rest: str, step: int, total: int, line_no: int, old_style: bool) -> Step | None:
    if "train_loss" not in rest:
        return None
    fields = _fields(rest)
    loss = _num(fields["train_loss"][0]) if "train_loss" in fields else None
    time_ms, approx = _train_time(fields)
    return Step(step, total, loss, time_ms, line_no, approx)


def _fields(rest: str) -> dict[str, tuple[str, str | None]]:
    """`name:value[unit]` fields of a step line: name -> (value, unit)."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _FIELD.finditer(rest)}


def _train_time(fields: dict) -> tuple[float | None, bool]:
    """A line's `train_time` in ms, and whether it was printed in minutes (to 0.1 minute)."""
    if "train_time" not in fields:
        return None, False
    value, unit = fields["train_time"]
    if unit == "m":
        return _num(value) * 60_000, True
    return (_num(value) * 1000 if unit == "s" else _num(value)), False


def _embedded_source(lines: list[str]) -> tuple[EmbeddedSource | None, int]:
    """Find script source at the top of a log; return it and the index of the first log line."""
    for i, line in enumerate(lines[:400]):
        marker = _SOURCE_MARKER.match(line)
        if marker:
            return EmbeddedSource(marker.group(2), int(marker.group(1)), i + 1), 0
    if lines and _PYTHON_START.match(lines[0]):
        for i, line in enumerate(lines):
            if _SEPARATOR.match(line):
                return _hash_source(lines[:i], 1), i
        return None, 0
    for i, line in enumerate(lines[:400]):
        if line.strip() == "Source code:":
            first = i + 1
            while first < len(lines) and _SEPARATOR.match(lines[first]):
                first += 1  # the block's own rule under the heading
            for j in range(first, len(lines)):
                if _SEPARATOR.match(lines[j]):
                    return _hash_source(lines[first:j], first + 1), 0
            body = tuple(lines[first:])
            return dataclasses.replace(_hash_source(list(body), first + 1), open_ended=body), 0
    return None, 0


def _hash_source(src_lines: list[str], first_line: int) -> EmbeddedSource:
    text = "\n".join(src_lines)
    return EmbeddedSource(
        sha256=hashlib.sha256((text + "\n").encode("utf-8", "replace")).hexdigest(),
        lines=len(src_lines),
        line=first_line,
        normalized_sha256=hashlib.sha256(text.rstrip("\n").encode("utf-8", "replace")).hexdigest(),
    )


def parse_log(text: str, path: str = "") -> ParsedLog:
    """Parse a whole log. Never raises on any input text."""
    log = ParsedLog(path=path)
    lines = text.splitlines()
    log.line_count = len(lines)
    log.embedded_source, start = _embedded_source(lines)
    in_hparams = False
    for index in range(start, len(lines)):
        _parse_line(log, lines[index], index + 1, in_hparams)
        raw = lines[index]
        if raw.strip() == "Hyperparameters:":
            in_hparams = True
        elif in_hparams and not raw.startswith("  "):
            in_hparams = False
    _finish(log)
    return log


def _parse_line(log: ParsedLog, raw: str, n: int, in_hparams: bool) -> None:
    if in_hparams:
        m = _HPARAM.match(raw)
        if m:
            log.hparams[m.group(1)] = Value(m.group(2).strip(), n, raw.strip())
            return
    line = _TIMESTAMP.sub("", raw.strip())
    if not line:
        return
    enabled = _ENABLED.match(line)
    if enabled:
        log.hparams.setdefault(enabled.group(1), Value("enabled", n, line))
    gpu = _GPU.match(line)
    if gpu:
        log.gpus.append(Value(gpu.group(1).strip(), n, line))
        return
    metric = _METRIC.match(line)
    if metric:
        _add_metric(log, metric, n, line)
        return
    step = _STEP_OLD.match(line) or _STEP_NEW.match(line)
    if step:
        parsed = _parse_step(step.group(3), int(step.group(1)), int(step.group(2)), n,
                             line.startswith("step:"))
        if parsed:
            log.steps.append(parsed)
        return
    for pattern, handler in _HANDLERS:
        m = pattern.match(line)
        if m:
            handler(log, m, n, line)
            return
    if re.match(r"gptq:generating autoregressive", line, re.I):
        log.calibration = "self-generated"


def _add_metric(log: ParsedLog, m: re.Match, n: int, line: str) -> None:
    name = m.group("name").strip()
    rest = m.group("rest")
    eval_ms = None
    if (t := _EVAL_TIME.search(rest)) is not None:
        eval_ms = _num(t.group(1))
    elif (t := _ELAPSED.search(rest)) is not None:
        eval_ms = _num(t.group(1)) * 1000
    kind = _classify(name) if name else "scored"
    if kind == "step_val":
        time_ms, _ = _train_time(_fields(rest))
        if time_ms is not None:
            log.val_step_time = Value(time_ms, n, line)
    short = name.split()[0] if name.split() else "val"
    log.metrics.append(Metric(short if kind != "step_val" else name, kind, _num(m.group("loss")),
                              _num(m.group("bpb")), _decimals(m.group("bpb")), eval_ms, n, line))


def _on_stop(log, m, n, line):
    log.stop = Value(int(m.group(1)), n, line)
    log.stop_step = int(m.group(2))


def _on_reserve(log, m, n, line):
    # The effective window is exact where the printed amount is rounded ("reserving 0s,
    # effective=599500ms"), so prefer it.
    if m.group(3):
        reserve_ms = TRAIN_BUDGET_MS - int(m.group(3))
    else:
        reserve_ms = _num(m.group(1)) * (1000 if m.group(2).lower() == "s" else 1)
    log.gptq_reserve_ms = Value(reserve_ms, n, line)


def _on_hessians(log, m, n, line):
    log.hessians = Value(_num(m.group(2)), n, line)
    log.calibration = log.calibration or "train"


def _on_hessians_ar(log, m, n, line):
    log.hessians = Value(math.nan, n, line)
    if _SELF_GEN.search(line):
        log.calibration = "self-generated"
    elif re.search(r"\bval", m.group(2), re.I):  # "(val-data)": not training data
        log.calibration = "validation"
    log.calibration = log.calibration or "train"


def _on_serialized(log, m, n, line):
    value = Value(int(m.group(2)), n, line)
    if m.group(1):
        log.model_bytes = value
    else:
        log.raw_model_bytes = value


def _on_total(log, m, n, line):
    log.totals.append((m.group(2) or m.group(1), Value(int(m.group(3)), n, line)))


def _on_artifact_size(log, m, n, line):
    log.model_bytes = Value(int(m.group(2).replace(",", "")), n, line)


def _on_size_then_total(log, m, n, line):
    log.totals.append((m.group(1).strip(), Value(int(m.group(2)), n, line)))


def _on_code(log, m, n, line):
    value = Value(int(m.group(2)), n, line)
    if m.group(1) == "compressed":
        log.code_bytes_compressed = value
    elif m.group(1) == "uncompressed":
        log.code_bytes_uncompressed = value
    else:
        log.code_bytes = value


def _on_total_eval(log, m, n, line):
    log.total_eval_time_ms = Value(_num(m.group(1)) * 1000, n, line)


def _on_val_loader(log, m, n, line):
    log.val_tokens = Value(int(m.group(2)), n, line)
    _note_dataset(log, m.group(1), n, line)


def _on_val_tokens(log, m, n, line):
    log.val_tokens = Value(int(m.group(1).replace(",", "")), n, line)


def _on_train_loader(log, m, n, line):
    log.train_shards = Value(int(m.group(2)), n, line)
    _note_dataset(log, m.group(1), n, line)


def _on_train_shards(log, m, n, line):
    log.train_shards = Value(int(m.group(1)), n, line)


def _on_seed(log, m, n, line):
    log.seed = Value(int(m.group(1)), n, line)


def _on_code_sha(log, m, n, line):
    log.code_sha256 = Value(m.group(1), n, line)


def _on_code_minified_sha(log, m, n, line):
    log.code_minified_sha256 = Value(m.group(1), n, line)


def _on_device(log, m, n, line):
    log.device = Value(m.group(1), n, line)


def _on_python(log, m, n, line):
    log.python_version = Value(m.group(1), n, line)


def _on_torch(log, m, n, line):
    log.torch_version = Value(m.group(1), n, line)


def _on_peak(log, m, n, line):
    log.peak_memory_mib = Value(int(m.group(1)), n, line)


def _on_world(log, m, n, line):
    log.world_size = Value(int(m.group(1)), n, line)


def _note_dataset(log: ParsedLog, text: str, n: int, line: str) -> None:
    m = _DATASET.search(text)
    if m and log.dataset is None:
        log.dataset = Value(m.group(0), n, line)


_HANDLERS = (
    (_STOP, _on_stop),
    (_RESERVE, _on_reserve),
    (_HESSIANS, _on_hessians),
    (_HESSIANS_AR, _on_hessians_ar),
    (_CALIBRATED, _on_hessians),
    (_SERIALIZED, _on_serialized),
    (_TOTAL, _on_total),
    (_ARTIFACT_SIZE, _on_artifact_size),
    (_SIZE_THEN_TOTAL, _on_size_then_total),
    (_CODE, _on_code),
    (_TOTAL_EVAL, _on_total_eval),
    (_VAL_LOADER, _on_val_loader),
    (_VAL_TOKENS, _on_val_tokens),
    (_VALIDATION_TOKENS, _on_val_tokens),
    (_TRAIN_LOADER, _on_train_loader),
    (_TRAIN_SHARDS, _on_train_shards),
    (_SEED, _on_seed),
    (_CODE_SHA, _on_code_sha),
    (_CODE_MINIFIED_SHA, _on_code_minified_sha),
    (_PYTHON, _on_python),
    (_DEVICE, _on_device),
    (_TORCH, _on_torch),
    (_PEAK, _on_peak),
    (_WORLD, _on_world),
)


def _finish(log: ParsedLog) -> None:
    """Fill figures the Hyperparameters block holds when no dedicated line gave them."""
    hp = log.hparams
    if log.seed is None and "seed" in hp:
        try:
            log.seed = Value(int(str(hp["seed"].value)), hp["seed"].line, hp["seed"].text)
        except ValueError:
            pass
    if log.world_size is None and "world_size" in hp:
        try:
            log.world_size = Value(int(str(hp["world_size"].value)), hp["world_size"].line,
                                   hp["world_size"].text)
        except ValueError:
            pass
    if log.dataset is None:
        for key in ("datasets_dir", "val_files", "data_path", "train_files"):
            if key in hp:
                _note_dataset(log, str(hp[key].value), hp[key].line, hp[key].text)
    if log.dataset is not None and "caseops" not in str(log.dataset.value).lower():
        caseops = hp.get("caseops_enabled")
        if caseops is not None and str(caseops.value) == "True":
            log.dataset = Value(f"{log.dataset.value}_caseops", caseops.line, caseops.text)
