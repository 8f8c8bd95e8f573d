"""keras_gmlp's variant tables, for the programs' flags.

`keras_gmlp/utils/variants.py` is plain data. It is loaded from its file
here because importing it through the package would import Keras before
the flags are parsed, and `--help` must answer at once."""

import importlib.util
import os


def variant_tables():
    """The `keras_gmlp.utils.variants` module, loaded without Keras."""
    package = importlib.util.find_spec("keras_gmlp").submodule_search_locations[0]
    path = os.path.join(package, "utils", "variants.py")
    spec = importlib.util.spec_from_file_location("_keras_gmlp_variants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
