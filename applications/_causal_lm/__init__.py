"""The causal-LM program (applications/train_causal_lm.py): its flags
(`recipe`), its corpus and next-token labels (`data`), the model (`model`),
training (`training`), generation with keras-hub's samplers (`generation`)
and the test scores, plots and summary (`reporting`)."""
