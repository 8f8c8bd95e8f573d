"""A griffe extension (mkdocs.yml, mkdocstrings' `extensions`) that makes
the API reference read like keras.io's: only the library's own words.

- A constant's docstring under inspection is its value's type's (a tuple
  shows `tuple`'s): it gets the comment above its assignment instead, as
  its one line, or nothing, and is then not shown.
- A class attribute that is another class (keras-hub's `backbone_cls`,
  `preprocessor_cls`, ...) is that class, documented on its own entry:
  documenting it under each model nests the family into itself.
- Bases inside Keras or keras-hub (`keras.src.layers.layer.Layer`) are named
  by their public path (`keras.layers.Layer`); private mixins are left out.
- Keras' `Call arguments:` section becomes a parameter table of its own;
  a parameter's type is the one its description starts with (Keras' style:
  `num_layers: int, number of blocks.`); `*args` and `**kwargs` are
  optional.
"""

import functools
import importlib
import inspect
import re

import griffe

# Where Keras' and keras-hub's public classes live.
PUBLIC_NAMESPACES = (
    "keras.layers",
    "keras.models",
    "keras.metrics",
    "keras.losses",
    "keras.callbacks",
    "keras.optimizers",
    "keras.optimizers.schedules",
    "keras.distribution",
    "keras_hub.models",
    "keras_hub.layers",
    "keras_hub.tokenizers",
    "keras_hub.samplers",
    "keras",
)
# The types a Keras-style description starts with.
TYPE_PHRASE = re.compile(
    r"^((?:optional |positive )?(?:int|bool|float|str|string|dict|tuple|list|"
    r"callable|dtype)(?: or (?:None|scalar tensor))?)[,.] +"
)
CALL_ARGUMENTS = "Call arguments"


class KerasStyleReference(griffe.Extension):
    def on_attribute_instance(self, *, node, attr, agent, **kwargs):
        if isinstance(node, griffe.ObjectNode) and attr.docstring is not None:
            own = getattr(type(node.obj), "__doc__", None)
            if isinstance(
                own, str
            ) and attr.docstring.value.strip() == inspect.cleandoc(own):
                comment = _comment_above(node)
                attr.docstring = (
                    griffe.Docstring(comment, parent=attr) if comment else None
                )

    def on_class_members(self, *, node, cls, agent, **kwargs):
        if not isinstance(node, griffe.ObjectNode):
            return
        for name in list(cls.members):
            value = getattr(node.obj, name, None)
            if inspect.isclass(value) and not value.__qualname__.startswith(
                f"{node.obj.__qualname__}."
            ):
                del cls.members[name]

    def on_class_instance(self, *, node, cls, agent, **kwargs):
        if isinstance(node, griffe.ObjectNode):
            bases = [_public_path(base) for base in node.obj.__bases__]
            cls.bases = [base for base in bases if base]

    def on_package(self, *, pkg, **kwargs):
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.__class__ = KerasDocstring


class KerasDocstring(griffe.Docstring):
    """A docstring parsed as griffe parses it, then read in Keras' style
    (parsed when a page renders it, as griffe's own are)."""

    @functools.cached_property
    def parsed(self):
        return _keras_sections(self.parent, self.parse())


def _comment_above(node):
    """The `#` comment right above `NAME = ...` in the owner's source."""
    try:
        source = inspect.getsource(node.parent.obj)
    except (OSError, TypeError):
        return ""
    match = re.search(
        rf"((?:^[ \t]*#.*\n)+)[ \t]*{re.escape(node.name)} = ", source, re.M
    )
    if not match:
        return ""
    lines = [line.strip().lstrip("#").strip() for line in match.group(1).splitlines()]
    return " ".join(lines)


def _public_path(base):
    """`keras.layers.Layer` for Keras' Layer, the path of a class of ours
    outside a private module, or None for a private class."""
    module = base.__module__
    if module.startswith(("keras.src.", "keras_hub.src.")):
        for namespace in PUBLIC_NAMESPACES:
            try:
                public = importlib.import_module(namespace)
            except ImportError:
                continue
            if getattr(public, base.__name__, None) is base:
                return f"{namespace}.{base.__name__}"
        return None
    path = f"{module}.{base.__qualname__}"
    if module == "builtins" or any(part.startswith("_") for part in path.split(".")):
        return None
    return path


def _walk(obj):
    yield obj
    for member in obj.members.values():
        if not member.is_alias and member.parent is obj:
            yield from _walk(member)


def _keras_sections(obj, parsed):
    sections = []
    for section in parsed:
        if (
            isinstance(section, griffe.DocstringSectionAdmonition)
            and section.title == CALL_ARGUMENTS
        ):
            section = _call_arguments(obj, section.value.contents) or section
        if isinstance(section, griffe.DocstringSectionParameters):
            for parameter in section.value:
                _type_and_default(parameter)
        sections.append(section)
    return sections


def _call_arguments(obj, text):
    """`Call arguments:` read as `Args:` of the class's `call`."""
    call = obj.members.get("call") if obj.is_class else None
    if call is not None and call.is_alias:
        call = call.final_target if call.resolved else None
    indented = "\n".join(f"    {line}" for line in text.splitlines())
    # The first line is a summary: griffe dedents the lines after it.
    docstring = griffe.Docstring(
        f"{CALL_ARGUMENTS}.\n\nArgs:\n{indented}",
        parent=call if call is not None and call.is_function else None,
        parser="google",
        parser_options={"warn_unknown_params": False, "warn_missing_types": False},
    )
    parsed = docstring.parse()
    if len(parsed) != 2 or not isinstance(parsed[1], griffe.DocstringSectionParameters):
        return None
    parsed[1].title = f"{CALL_ARGUMENTS}:"
    return parsed[1]


def _type_and_default(parameter):
    if not parameter.annotation:
        match = TYPE_PHRASE.match(parameter.description)
        if match:
            parameter.annotation = match.group(1)
            rest = parameter.description[match.end() :]
            parameter.description = rest[:1].upper() + rest[1:]
    if parameter.name.startswith("**") and not parameter.default:
        parameter.value = "{}"
    elif parameter.name.startswith("*") and not parameter.default:
        parameter.value = "()"
