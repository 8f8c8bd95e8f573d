"""`import keras_gmlp.models` registers every keras-hub model class with
Keras under the name its decorator uses, as the real class, and shows the
public names to `dir()` and static tools."""

import ast
import inspect

import keras

import keras_gmlp.models


def test_each_public_class_is_registered_as_itself():
    for name in keras_gmlp.models.__all__:
        cls = getattr(keras_gmlp.models, name)
        assert keras.saving.get_registered_name(cls) == f"keras_gmlp>{name}"
        assert keras.saving.get_registered_object(f"keras_gmlp>{name}") is cls


def test_public_names_are_plain_imports():
    # Plain `from ... import` statements, so IDEs and static analysis see
    # them; no module-level __getattr__ hides any. They sit at the top level
    # or in the `with` block that names the hub extra when keras-hub is
    # missing.
    tree = ast.parse(inspect.getsource(keras_gmlp.models))
    statements = list(tree.body)
    statements += [
        s for node in tree.body if isinstance(node, ast.With) for s in node.body
    ]
    imported = {
        alias.asname or alias.name
        for node in statements
        if isinstance(node, ast.ImportFrom)
        and node.module.startswith("keras_gmlp.models.")
        for alias in node.names
    }
    assert set(keras_gmlp.models.__all__) == imported
    assert set(keras_gmlp.models.__all__) <= set(dir(keras_gmlp.models))
    for module in (keras_gmlp, keras_gmlp.models, keras_gmlp.applications):
        assert not hasattr(module, "__getattr__"), module.__name__
