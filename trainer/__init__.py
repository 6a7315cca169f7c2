"""The pgolf trainer: the Parameter Golf record stack as a small library.

One job per module: `config` (every hyperparameter), `shards` and `data` (token shards, loaders),
`bpb` (bytes per token), `attention`, `model`, `optim`, `schedule` (LR, looping, EMA), `evaluate`,
`train` (the loop), `runlog` and `progress` (logging), `distributed`, `preflight` (input checks),
`runtime` (what a run hands its phases), `main` (the entry point), `dataprep` (`pgolf data`).
`pgolf train` bundles what a run imports into one train_gpt.py. Importing a module starts nothing.
"""
