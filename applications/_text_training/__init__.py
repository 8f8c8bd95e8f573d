"""What the three text programs (pretrain_mlm, train_causal_lm,
finetune_text_classifier) share to train, beyond their input (`_text_input`):
the step flags (`flags`) and the step-counted, checkpointed fit on a
streamed input, its throughput and the language models' summary
(`training`). Only `flags` may be imported before the flags are parsed.
"""
