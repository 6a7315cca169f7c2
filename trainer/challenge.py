"""The challenge's limits, stated once. The trainer fits its artifact and schedule to them, the
audit checks submissions against them and the packager quotes them; this module imports nothing,
so every layer of every package can read it."""

CAP_BYTES = 16_000_000  # code + compressed model, in decimal bytes
TRAIN_BUDGET_MS = 600_000  # training time on 8xH100, record track
EVAL_BUDGET_MS = 600_000  # evaluation time on 8xH100, record track
MIN_IMPROVEMENT_NATS = 0.005  # a new record beats the last one by at least this much...
SIGNIFICANCE_P = 0.01  # ...at p below this (one-sided Welch t-test over the seeds)
