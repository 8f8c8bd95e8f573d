"""What the programs in applications/ share: flags, atomic files, Ctrl-C
handling, distribution, resumable training, batches, plots and summaries.
The text programs' own pipeline is in `_text_input`, their step-counted
training in `_text_training`; each program's own parts are in its package
(`_image_classifier`, `_masked_lm`, `_causal_lm`, `_text_classifier`).

The programs import it as a sibling package (a script's own folder is first
on `sys.path`); the tests find it through pytest's `pythonpath`. Only
`flags`, `flag_values`, `files`, `interrupt`, `logs` and `tensorflow_input`
may be imported before the flags are parsed: they use the standard library
alone (until called). The other modules
import Keras.
"""
