"""The masked-LM pretraining program (applications/pretrain_mlm.py): its
flags and recipes (`recipe`), its corpus and masks (`data`), the model
(`model`), training (`training`) and the test scores, plots and summary
(`reporting`)."""
