"""Per-rule waivers: `--waive RULE_ID=reason` or a file of `RULE_ID: reason` lines."""

from __future__ import annotations

from pathlib import Path

from audits import catalogue
from audits.submission import InputError

MAX_WAIVER_FILE = 64 * 1024


def parse_waiver(text: str, where: str) -> tuple[str, str]:
    for sep in ("=", ":"):
        if sep in text:
            rule, reason = (part.strip() for part in text.split(sep, 1))
            break
    else:
        raise InputError(f"{where}: waiver {text!r} has no reason; write RULE_ID=reason")
    if rule not in catalogue.BY_ID:
        raise InputError(f"{where}: unknown rule {rule!r}; `pgolf audit --list-rules` lists them")
    if not reason:
        raise InputError(f"{where}: waiver of {rule} has an empty reason; say why it does not apply")
    return rule, reason


def load_waivers(cli: tuple[str, ...], files: tuple[str, ...]) -> dict[str, str]:
    waivers: dict[str, str] = {}
    for path in files:
        p = Path(path)
        try:
            data = p.read_bytes()[: MAX_WAIVER_FILE + 1]
        except OSError as exc:
            raise InputError(f"{path}: cannot read the waivers file ({exc.strerror})") from exc
        if len(data) > MAX_WAIVER_FILE:
            raise InputError(f"{path}: waivers file over 64 KiB; it should be a few lines")
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                rule, reason = parse_waiver(line, f"{path}:{number}")
                waivers[rule] = reason
    for text in cli:
        rule, reason = parse_waiver(text, "--waive")
        waivers[rule] = reason
    return waivers
