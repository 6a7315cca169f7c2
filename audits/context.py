"""The options every check may read, fixed once per audit run (which rules they select:
registry.selected)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from trainer.challenge import SIGNIFICANCE_P

DEFAULT_PYTHON = (3, 10)
DEFAULT_PYTHON_ORIGIN = (
    "default: the community reviewers' CPU smoke box runs Python 3.10; no organizer rule pins a "
    "version (openai/parameter-golf#17, #1591)"
)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The previous record to beat: per-seed val_bpb values and where they came from."""

    bpb: tuple[float, ...]
    label: str



@dataclasses.dataclass(frozen=True)
class AuditOptions:
    target_python: tuple[int, int] = DEFAULT_PYTHON
    python_origin: str = DEFAULT_PYTHON_ORIGIN
    only: frozenset[str] = frozenset()
    skip: frozenset[str] = frozenset()
    strict: bool = False
    waivers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    baseline: Baseline | None = None
    p_threshold: float = SIGNIFICANCE_P
    base_ref: str | None = None
    changed_files: tuple[tuple[str, str], ...] | None = None  # the PR's change, from --changed-files
    smoke: bool = False
    smoke_forward: bool = False
    probe: bool = False  # run the causality probes on pgolf's own evaluation (--probe)
    waiver_comments: bool = True  # honour `# pgolf: waive` comments in the submission's code

    @property
    def python_label(self) -> str:
        return f"{self.target_python[0]}.{self.target_python[1]}"
