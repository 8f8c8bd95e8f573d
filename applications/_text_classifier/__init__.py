"""The fine-tuning program (applications/finetune_text_classifier.py): its
flags (`recipe`), the offline tasks built from the standard library's
docstrings (`offline_tasks`), the task's examples from any source (`data`),
the classifier over a preset (`model`), training (`training`) and the test
score, plots and summary (`reporting`)."""
