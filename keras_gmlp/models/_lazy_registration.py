"""Registers keras-hub model classes with Keras before their modules load.

The text (and keras-hub image) models subclass keras-hub classes, so
importing them imports keras-hub and, with it, TensorFlow. `import
keras_gmlp` must stay light, yet `keras.saving.load_model` must find every
class the library saves. Keras looks a saved object's `registered_name` up
in `keras.saving.get_custom_objects()` (its public registry) and then calls
only `from_config` on what it finds. So each name starts out mapped to a
`LazyRegisteredClass` placeholder whose `from_config` imports the defining
module: its `@keras.saving.register_keras_serializable` decorator then
replaces the placeholder with the real class, and later look-ups never see
the placeholder again.

A model family adds its classes with `register_lazily(module, names)`; see
`keras_gmlp/models/__init__.py`, which holds the one list.
"""

import importlib

import keras

PACKAGE = "keras_gmlp"


class LazyRegisteredClass:
    """Stands in for class `name` of `module` until that module is imported.

    Every attribute (`from_config`, `from_preset`, `__bases__`, ...) and
    calling it are forwarded to the real class, importing it on first use;
    so `issubclass(placeholder, keras_hub.models.Task)` also holds, as
    keras-hub's preset loader checks.
    """

    def __init__(self, module, name):
        self._module = module
        self._name = name

    def resolve(self):
        """Imports the defining module and returns the real class."""
        return getattr(importlib.import_module(self._module), self._name)

    def from_config(self, config):
        return self.resolve().from_config(config)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute):
        if attribute.startswith("_") and not attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    def __repr__(self):
        return f"<lazily registered {self._module}.{self._name}>"


def register_lazily(module, names):
    """Maps `keras_gmlp>{name}` to a placeholder for each class not yet
    registered (a class already imported keeps its real registration)."""
    custom_objects = keras.saving.get_custom_objects()
    for name in names:
        custom_objects.setdefault(
            f"{PACKAGE}>{name}", LazyRegisteredClass(module, name)
        )
