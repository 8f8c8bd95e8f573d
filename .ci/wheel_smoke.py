"""Run inside a fresh virtual environment that holds only the built wheel
(its dependencies come from CI's environment, appended to sys.path): every
public module imports from the wheel, and the README's first example runs."""

import importlib
import pathlib
import pkgutil
import re
import sys

import keras_gmlp

readme = pathlib.Path(sys.argv[1]).read_text()
location = pathlib.Path(keras_gmlp.__file__).parent
if "site-packages" not in str(location):
    sys.exit(f"keras_gmlp was imported from {location}, not from the wheel")

modules = ["keras_gmlp"]
for info in pkgutil.walk_packages(keras_gmlp.__path__, "keras_gmlp."):
    if not info.name.rsplit(".", 1)[-1].startswith("_"):
        modules.append(info.name)
for name in modules:
    importlib.import_module(name)
print(f"imported {len(modules)} public modules from {location}")

first_example = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
namespace = {}
exec(compile(first_example, "README.md example 1", "exec"), namespace)
model = namespace["model"]
assert model.output_shape == (None, 10), model.output_shape
# Stem 4*4*3*64 + 64; per block: norm 128, Dense 64->384, SGU norm 2*192,
# W 64*64 + b 64, Dense 192->64; final norm 128; head 64*10 + 10.
block = 128 + (64 * 384 + 384) + 2 * 192 + 64 * 64 + 64 + (192 * 64 + 64)
expected = (4 * 4 * 3 * 64 + 64) + 4 * block + 128 + (64 * 10 + 10)
assert model.count_params() == expected, (model.count_params(), expected)
print("README example 1 ran from the wheel:", model.count_params(), "parameters")
