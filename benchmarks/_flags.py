"""The benchmarks' flag parser is the programs' (applications/_shared/
flag_parser.py: no abbreviations, "did you mean" for a misspelled flag),
loaded by its path so that a benchmark needs no sys.path change."""

import importlib.util
import pathlib
import sys

_NAME = "_shared_flag_parser"
_PATH = pathlib.Path(__file__).resolve().parents[1] / "applications" / "_shared"


def _load():
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, _PATH / "flag_parser.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


FlagParser = _load().FlagParser
