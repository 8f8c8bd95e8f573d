"""What the programs in applications/ share: flags, atomic files, Ctrl-C
handling, resumable training, batches, plots and summaries.

The programs import it as a sibling package (a script's own folder is first
on `sys.path`); the tests find it through pytest's `pythonpath`. Only
`flags`, `flag_values`, `files`, `interrupt` and `logs` may be imported before
the flags are parsed: they use the standard library alone. The other modules
import Keras.
"""
