"""The pgolf trainer: the Parameter Golf record stack as a small library.

One job per module (docs/architecture.md places each in the run).
Ground floor: `challenge` (the challenge's limits), `errors` (bad input to a run), `files` (the
atomic write), `extras` (marks what a record bundle leaves out).
Settings and running: `config` (every hyperparameter), `schedule` (LR, momentum, looping, EMA),
`distributed`, `runtime` (what a run hands its phases), `runlog` and `progress` (logging),
`preflight` (input checks), `main` and `__main__` (the entry points), `train` (the loop).
Data: `shards` (the token shard format), `data` (loaders), `bpb` (bytes per token), `caseops`
(case as operators), `dataprep` (`pgolf data`).
The model: `model`, `attention` (picks the kernel), `fa4` (FlashAttention 4), `gates`, `xsa`,
`qk_rope`, `softcap_ce`, `mlp_gemm` and `residual_gemm` (quack's GEMM epilogues),
`triton_support`, `optim` (Muon and AdamW), `flops` (MFU).
After training: `hessians`, `quant` (GPTQ, AWQ-lite), `lqer`, `rans` and `compress` (the
artifact format), `fitcap` (pruning under the cap), `codesize` (code bytes), `artifact` (the
size check and the write), `export` (the whole export).
Scoring: `evaluate`, `sliding`, `ttt` (score-first TTT), `doc_ttt` and `lora` (per-document LoRA
TTT), `ngram_tilt` (the n-gram tilt of scored distributions), `scoring` (every scored phase),
`probe` (the causality probes).
Bundling: `bundle` (builds the single-file train_gpt.py; not part of it), `localnames` (short
local names for the record bundle).
`pgolf train` bundles what a run imports into one train_gpt.py. Importing a module starts nothing.
"""
