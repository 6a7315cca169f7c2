"""Legality of training and evaluation: what the code does with validation data, judged by the
static analysis in audits/legality. One module per rule: its row, its words, its check."""

from audits.rules.legality import (  # noqa: F401, I001  (the order is the catalogue's)
    ttt_score_after_adapt, prequant_ttt_on_val, val_data_in_training, paid_prefix,
    gptq_calib_on_val, slot, etlb, ngram_target_in_key, ngram_not_normalized, two_pass_rescore,
    byte_mixture_not_normalized, realized_token_gate, bos_cross_doc_leak, bpb_byte_accounting,
    val_subset, train_data_at_eval, network_at_eval,
)
