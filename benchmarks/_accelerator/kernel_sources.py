"""What the profile's costliest kernels compute, read from the optimised HLO
that XLA dumped when it compiled the step.

A profile names kernels (`fusion_1783`); the name alone does not say which
layer's op a fusion holds, and the next change to the layers depends on it.
The Keras-JAX worker of a check with profile rows runs with XLA's dump of
the training steps (`dump_flags`); each top kernel is then looked up in the
dumped module that defines all of them: the fusion's kind and shape, the
ops inside it, and the JAX op and source line it comes from.
"""

import collections
import glob
import os
import re

import hlo_census

MODULES = "jit_train_step"
# `name = shape opcode(`; a multi-output fusion's shape is a tuple.
DEFINITION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\(.*?\)|\S+) ([\w-]+)\(")
SOURCE = re.compile(r'source_file="([^"]+)" source_line=(\d+)')
CALLS = re.compile(r"calls=%?([\w.\-]+)")
# A profile label is the HLO op, with the kernel's own name in parentheses
# where they differ (a command buffer's kernels: `command_buffer_3 (fusion_7)`).
LABEL = re.compile(r"^([\w.\-]+)(?: \(([\w.\-]+)\))?")
SKIPPED_OPS = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast"}


def dump_flags(directory):
    """XLA_FLAGS that dump the optimised HLO of the training steps."""
    return (
        f"--xla_dump_to={directory} --xla_dump_hlo_as_text "
        f"--xla_dump_hlo_module_re={MODULES}"
    )


def dump_directory():
    """Where this process's XLA dumps its modules, or None."""
    match = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", ""))
    return match.group(1) if match else None


def describe(top, directory):
    """`top` (the profile's kernels, each a dict with `kernel`), each with
    `computes` added where a dumped module in `directory` defines its HLO
    name."""
    if directory is None:
        return top
    names = [hlo_name(entry["kernel"]) for entry in top]
    found = defining_module(names, directory)
    if found is None:
        return top
    definitions, fused = found
    return [
        dict(entry, computes=summary(definitions[name], fused))
        if name in definitions
        else entry
        for entry, name in zip(top, names)
    ]


def hlo_name(label):
    """The HLO instruction a profile label names (the kernel's own name
    inside a command buffer, else the label's first word), as a GPU kernel
    spells it: `fusion.7` runs as the kernel `fusion_7`."""
    match = LABEL.match(label)
    name = (match.group(2) or match.group(1)) if match else label
    return kernel_spelling(name)


def kernel_spelling(name):
    return re.sub(r"[.\-]", "_", name)


def defining_module(names, directory):
    """({name: its instruction line}, {computation: lines}) of the newest
    dumped module that defines the most of `names`, or None."""
    paths = glob.glob(os.path.join(directory, f"*{MODULES}*after_optimizations.txt"))
    best, best_count = None, 0
    for path in sorted(paths, key=os.path.getmtime, reverse=True):
        with open(path) as file:
            text = file.read()
        definitions, fused = {}, {}
        for computation, lines in hlo_census.computations(text):
            fused[computation.lstrip("%")] = lines
            for line in lines:
                match = DEFINITION.match(line)
                if match and kernel_spelling(match.group(1)) in names:
                    definitions[kernel_spelling(match.group(1))] = line
        if len(definitions) > best_count:
            best, best_count = (definitions, fused), len(definitions)
    return best


def summary(line, fused):
    """The kind, shape, inner ops and origin of one HLO instruction line."""
    match = DEFINITION.match(line)
    result = dict(opcode=match.group(3), shape=match.group(2))
    kind = hlo_census.KIND.search(line)
    if kind:
        result["kind"] = kind.group(1)
    calls = CALLS.search(line)
    if calls and calls.group(1) in fused:
        ops, origins = collections.Counter(), collections.Counter()
        for inner in fused[calls.group(1)]:
            inner_match = DEFINITION.match(inner)
            if inner_match and inner_match.group(3) not in SKIPPED_OPS:
                ops[inner_match.group(3)] += 1
                origin = hlo_census.OP_NAME.search(inner)
                if origin:
                    origins[origin.group(1)[-160:]] += 1
        result["ops"] = dict(ops.most_common(8))
        if origins:  # the fused ops' own JAX ops: a fusion keeps its root's
            result["origins"] = [origin for origin, _ in origins.most_common(3)]
    op_name = hlo_census.OP_NAME.search(line)
    if op_name:
        result["op"] = op_name.group(1)[-200:]
    source = SOURCE.search(line)
    if source:
        result["source"] = f"{os.path.basename(source.group(1))}:{source.group(2)}"
    return result
