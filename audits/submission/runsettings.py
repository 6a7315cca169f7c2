"""The settings a submission's runs used: environment variables its launch scripts and README's
run commands set (`NGRAM_CACHE=1 torchrun ...`) and the hyperparameters its logs print. Code the
analysis finds behind a setting that is off by default ran when these turn it on."""

from __future__ import annotations

import re

from audits.submission import Submission

_ASSIGN = re.compile(r"(?<![\w$.-])(?:export\s+)?([A-Z][A-Z0-9_]{2,})=(\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|]*)")
_OFF = {"", "0", "false", "no", "off", "none", "0.0"}


def turned_on(sub: Submission) -> dict[str, str]:
    """Setting name (as the environment spells it) -> where a run turned it on, for every setting
    some launch line or log sets to a value that is not off (0, false, empty)."""
    found: dict[str, str] = {}
    texts = sorted(sub.launch.items()) + ([("README.md", sub.readme)] if sub.readme else [])
    for rel, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            for name, value in _ASSIGN.findall(line):
                if value.strip("\"'").lower() not in _OFF:
                    found.setdefault(name, f"{rel}:{number} ({name}={value})")
    for log in sub.logs:
        for name, value in log.parsed.hparams.items():
            if str(value.value).strip().lower() not in _OFF | {"false"}:
                found.setdefault(name.upper(), f"{log.rel}:{value.line} ({value.text})")
    return found
