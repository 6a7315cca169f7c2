"""How a submission's runs were launched: the settings its launch scripts and README's run commands
set (`NGRAM_CACHE=1 torchrun ...`) and its logs' hyperparameters print or announce
(`ngram_cache:enabled`) (code the analysis finds behind a setting that is off by default ran when
these turn it on), and the data files those lines put in place."""

from __future__ import annotations

import hashlib
import re

from audits.submission import Submission

_ASSIGN = re.compile(r"(?<![\w$.-])(?:export\s+)?([A-Z][A-Z0-9_]{2,})=(\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|)`,]*)")
_OFF = {"", "false", "no", "off", "none"}
_ON = {"1", "true", "yes", "on"}
_WORD = re.compile(r"[A-Za-z0-9_.+-]*")


def mode_word(text) -> bool:
    """A setting's value as a word a test compares with (`"max_conf"`, `"2"`, `""`): no spaces,
    nothing that would read as part of another word."""
    return isinstance(text, str) and len(text) <= 64 and _WORD.fullmatch(text) is not None


def word_on(word: str) -> bool | None:
    """Whether a setting's word reads as on (`"1"`, `"true"`) or off (`"0"`, `""`); None for
    any other word (a mode)."""
    word = word.strip().lower()
    return True if word in _ON else False if word in _OFF or word == "0" else None


def _is_off(value: str) -> bool:
    """`0`, `0.0`, `false`, empty: a setting turned off (the prose around it aside, as in
    "disabled (TTT_EPOCHS=0).")."""
    value = value.strip("\"'").rstrip(".:").strip().lower()
    try:
        return float(value) == 0
    except ValueError:
        return value in _OFF


def turned_on(sub: Submission) -> dict[str, str]:
    """Setting name (as the environment spells it) -> where a run turned it on, for every setting
    some log or launch line sets to a value that is not off (0, false, empty); and "NAME=word"
    for a value that is a word (`BLEND_MODE=max_conf`: code under `mode == "max_conf"` ran). A
    setting the logs' hyperparameters print is as the logs show it: they are the runs, a README
    may describe others."""
    found: dict[str, str] = {}
    logged: set[str] = set()
    for log in sub.logs:
        for name, value in log.parsed.hparams.items():
            logged.add(name.upper())
            if not _is_off(str(value.value)):
                for key in _keys(name.upper(), str(value.value)):
                    found.setdefault(key, f"{log.rel}:{value.line} ({value.text})")
    texts = sorted(sub.launch.items()) + ([("README.md", sub.readme)] if sub.readme else [])
    for rel, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            for name, value in _ASSIGN.findall(line):
                if name not in logged and not _is_off(value):
                    for key in _keys(name, value):
                        found.setdefault(key, f"{rel}:{number} ({name}={value})")
    return found


def _keys(name: str, value: str) -> list[str]:
    """The settings a value turns on: the name, and "NAME=word" where the value is a word."""
    word = value.strip().strip("\"'")
    return [name, f"{name}={word}"] if mode_word(word) else [name]


def turned_off(sub: Submission) -> dict[str, str]:
    """Setting name -> where the runs had it off (0, false, empty): the logs' hyperparameters,
    else a launch or README line, read as turned_on reads them. A setting some run turned on is
    not off."""
    on = turned_on(sub)
    found: dict[str, str] = {}
    logged: set[str] = set()
    for log in sub.logs:
        for name, value in log.parsed.hparams.items():
            logged.add(name.upper())
            if _is_off(str(value.value)) and name.upper() not in on:
                found.setdefault(name.upper(), f"{log.rel}:{value.line} ({value.text})")
    texts = sorted(sub.launch.items()) + ([("README.md", sub.readme)] if sub.readme else [])
    for rel, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            for name, value in _ASSIGN.findall(line):
                if name not in logged and name not in on and _is_off(value):
                    found.setdefault(name, f"{rel}:{number} ({name}={value})")
    return found


# Programs that start a training script: `torchrun --nproc_per_node=8 train.py`, `python3 eval.py`.
_RUNNERS = ("torchrun", "python", "python3", "launch", "deepspeed")


def _started(line: str) -> tuple[str, str] | None:
    """(runner, script name) of a command on `line`: the first `.py` word after a runner word.
    Read word by word (the line is the submission's text: no pattern that could backtrack)."""
    words = [w.strip("`'\"();,.&|") for w in line.split()]
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] in _RUNNERS:
            for later in words[i + 1:]:
                if later.endswith(".py"):
                    return word.rsplit("/", 1)[-1], later.rsplit("/", 1)[-1]
            return None
    return None


def launched(sub: Submission) -> tuple[str, ...]:
    """The shipped scripts the runs started: those whose source a log embeds (they are what
    produced the scores), else those the launch scripts' or the README's commands start,
    `torchrun` ones first (the scored run is a distributed one). Empty when nothing says."""
    embedded = [log.parsed.embedded_source for log in sub.logs]
    shown = [rel for rel, script in sorted(sub.scripts.items())
             if any(src is not None and embeds(src, script) for src in embedded)]
    if shown:
        return tuple(shown)
    texts = sorted(sub.launch.items()) + ([("README.md", sub.readme)] if sub.readme else [])
    named: dict[str, list[str]] = {"torchrun": [], "other": []}
    for _, text in texts:
        for line in text.splitlines():
            started = _started(line)
            if started is not None:
                named["torchrun" if started[0] == "torchrun" else "other"].append(started[1])
    for names in named.values():
        found = [rel for rel in sorted(sub.scripts) if rel.rsplit("/", 1)[-1] in names]
        if found:
            return tuple(found)
    return ()


def script_hashes(script) -> set[str]:
    hashes = {hashlib.sha256(script.data).hexdigest()}
    if script.text is not None:
        hashes.add(hashlib.sha256(script.text.rstrip("\n").encode()).hexdigest())
    return hashes


def embeds(src, script) -> bool:
    """Whether a log's embedded source is `script` as shipped (trailing newlines ignored; a
    16-hex marker compared as a prefix; an open-ended block as a prefix of the log's lines)."""
    if src.open_ended is not None:
        return script.text is not None and src.starts_with(script.text)
    candidates = {src.sha256, src.normalized_sha256} - {None}
    return any(h.startswith(c) or c.startswith(h) for h in script_hashes(script) for c in candidates)


_COUNTER = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)[=:]\s*(\d+)\b(?![.\w])")


def zero_counters(sub: Submission) -> dict[str, str]:
    """Counters (`word_gate=0`) every log of the runs prints, and prints only at 0: what they
    count never happened in any run. Name (upper case) -> the first such line."""
    seen: dict[str, str] = {}
    nonzero: set[str] = set()
    per_log: list[set[str]] = []
    for log in sub.logs:
        names = set()
        for number, line in enumerate(log.text.splitlines(), 1):
            for name, value in _COUNTER.findall(line):
                key = name.upper()
                names.add(key)
                if int(value):
                    nonzero.add(key)
                else:
                    seen.setdefault(key, f"{log.rel}:{number} ({name}={value})")
        per_log.append(names)
    if not per_log:
        return {}
    everywhere = set.intersection(*per_log)
    return {k: v for k, v in seen.items() if k in everywhere and k not in nonzero}


_VAL_SHARD = re.compile(r"fineweb_val_\w*\.bin")
_TRAIN_SHARD = re.compile(r"fineweb_train_\w*\.bin")
_LINK = re.compile(r"^\s*(?:sudo\s+)?(?:ln|cp|mv|rsync)\b")


def val_as_train(sub: Submission) -> list[tuple[str, int, str]]:
    """(file, line, text) of launch lines that put a validation shard where the training loader
    reads: `ln -s .../fineweb_val_000000.bin .../fineweb_train_000000.bin`, or a setting whose
    default in the scripts names the training shards set to validation shards
    (`TRAIN_FILES=fineweb_val_*.bin` where the script reads `os.environ.get("TRAIN_FILES",
    ".../fineweb_train_*.bin")`)."""
    texts = sorted(sub.launch.items()) + ([("README.md", sub.readme)] if sub.readme else [])
    train_settings = _train_shard_settings(sub)
    found = []
    for rel, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            val, train = _VAL_SHARD.search(line), _TRAIN_SHARD.search(line)
            linked = _LINK.match(line) and val and train and val.start() < train.start()
            if linked or any(name in train_settings and "fineweb_val_" in value
                             for name, value in _ASSIGN.findall(line)):
                found.append((rel, number, line.strip()))
    return found


# `os.environ.get("TRAIN_FILES", os.path.join(data_path, "fineweb_train_*.bin"))`
# the default runs to the call's `)`, the line's end or the next `environ` (a pattern that could run
# past it scanned the rest of the line from each one, quadratic in a line of them)
_TRAIN_DEFAULT = re.compile(r"""environ(?:\.get)?\(\s*["']([A-Z][A-Z0-9_]*)["']\s*,"""
                            r"""(?:(?!environ)[^)\n])*fineweb_train_""")


def _train_shard_settings(sub: Submission) -> set[str]:
    """The settings the scripts read with the training shards as their default."""
    return {name for script in sub.scripts.values() if script.source
            for name in _TRAIN_DEFAULT.findall(script.source)}
