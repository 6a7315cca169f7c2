"""The CPU smoke import: run a submission's entry script as a module, inside a sandbox, with
GPU-only modules stubbed, and report what happened (the rule, audits/rules/smoke.py, puts it
in words).

Modules: `isolation` (sandbox levels, command, environment), `stubs` and `child` (the child side,
standard library only), `guard` (static check for a script that trains on import), `run`
(`run_smoke`, the parent side), `pipes` (the child's output and report, read by the parent),
`reap` (killing what the child started), `snapshot` (the bounded copy and fingerprint of the
folder) and `tempdirs` (locked temporary folders and their removal).
"""
