"""keras_gmlp's variant tables, for the programs' flags.

`keras_gmlp/utils/variants.py` is plain data. It is loaded from its file
here because importing it through the package would import Keras before
the flags are parsed, and `--help` must answer at once, also before the
package is installed."""

import importlib.util
import pathlib

# The programs live in the repository, beside the package they run.
CHECKOUT_TABLES = (
    pathlib.Path(__file__).resolve().parents[2] / "keras_gmlp/utils/variants.py"
)


def variant_tables():
    """The `keras_gmlp.utils.variants` module, loaded without Keras: from
    this checkout, or from the installed package when run elsewhere."""
    path = CHECKOUT_TABLES
    if not path.is_file():
        package = importlib.util.find_spec("keras_gmlp")
        if package is None:
            raise SystemExit(
                "keras_gmlp is neither beside this program nor installed; "
                'install it with: .venv/bin/python -m pip install -e ".[all,apps]"'
            )
        path = pathlib.Path(
            package.submodule_search_locations[0], "utils", "variants.py"
        )
    spec = importlib.util.spec_from_file_location("_keras_gmlp_variants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
