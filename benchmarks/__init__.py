"""pgolf's benchmarks and measurement scripts, one module each, run from the repository root:

    python -m benchmarks.NAME [ARGS]

What each measures is in its docstring; the numbers they gave are in docs/benchmarks.md (training,
export, evaluation), docs/legality.md (legality_scores, legality_speed) and docs/pyversion.md
(pyversion_speed).
"""
