"""The pgolf trainer: the Parameter Golf record stack as a small library.

One job per module: `config` (every hyperparameter), `shards` and `data` (token shards, loaders),
`bpb` (bytes per token), `attention`, `model`, `optim`, `schedule` (LR, looping, EMA), `evaluate`,
`train` (the loop), `runlog` and `progress` (logging), `distributed`, `preflight` (input checks),
`runtime` (what a run hands its phases), `main` (the entry point), `dataprep` (`pgolf data`),
`bundle` (builds the single-file train_gpt.py; not part of it), `extras` (marks what a record
bundle leaves out).
After training: `hessians`, `quant` (GPTQ), `compress` (the artifact format), `codesize` (code
bytes), `artifact` (the size check and the write), `sliding` and `ttt` (scoring), `scoring`
(every scored phase), `export` (the whole export), `probe` (the causality probes).
`pgolf train` bundles what a run imports into one train_gpt.py. Importing a module starts nothing.
"""
