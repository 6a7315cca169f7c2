"""The CPU smoke import: run a submission's entry script as a module, inside a sandbox, with
GPU-only modules stubbed, and classify what happened.

Modules: `isolation` (sandbox levels, command, environment), `stubs` and `child` (the child side,
standard library only), `guard` (static check for a script that trains on import), `run`
(`run_smoke`, the parent side) and `classify` (findings from a result).
"""
