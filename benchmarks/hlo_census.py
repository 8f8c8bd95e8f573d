"""What XLA makes of one gMLP block and one Mixer block: the transposes,
copies, fusions and products of a compiled training (or inference) step,
read from the optimised HLO on this machine's JAX backend.

A block bound by memory traffic (gMLP-S's, timm's tables show) pays for
every transpose and copy XLA keeps and every elementwise op it leaves
unfused. This counts them per block, with the line of keras-gmlp (or
Keras) each one comes from, so a change to the layers shows what it
removed. XLA's output changes between versions, so this is a benchmark
to rerun, not a test:

    .venv/bin/python benchmarks/hlo_census.py                   # gMLP-S and Mixer-B blocks, training
    .venv/bin/python benchmarks/hlo_census.py --mode infer --json outputs/hlo_census.json

The CPU's HLO is not the GPU's (other fusion rules, oneDNN products), but
the transposes and copies the layers ask for appear on both.
"""

import collections
import json
import os
import re
import sys

from _flags import FlagParser

# The blocks of gMLP-S/16 and Mixer-B/16 at 224x224 (196 tokens).
BLOCKS = {
    "gmlp_s16": dict(hidden_dim=256, intermediate_dim=1536, sequence_length=196),
    "mixer_b16": dict(
        hidden_dim=768, tokens_mlp_dim=384, channels_mlp_dim=3072, sequence_length=196
    ),
}
COUNTED = ("transpose", "copy", "fusion", "dot", "convolution", "custom-call")
# What the layers ask of XLA before it optimises anything, the same on
# every device: the StableHLO ops of the lowered (not compiled) step.
REQUESTED = (
    "transpose",
    "convert",
    "reshape",
    "broadcast_in_dim",
    "dot_general",
    "slice",
    "dynamic_slice",
)
STABLEHLO_OP = re.compile(r"= stablehlo\.(\w+)")
INSTRUCTION = re.compile(r"^\s*(ROOT )?%?[\w.\-]+ = (\S+) (\w[\w-]*)\(")
OP_NAME = re.compile(r'op_name="([^"]+)"')
KIND = re.compile(r"kind=(k\w+)")


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--mode", choices=("train", "infer"), default="train")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--dtype-policy",
        default="mixed_bfloat16",
        help="Keras dtype policy of the block (default mixed_bfloat16)",
    )
    parser.add_argument(
        "--kernels",
        choices=("auto", "accelerator", "plain", "fast"),
        default="auto",
        help="the layers' kernel forms: 'auto' takes this CPU's, 'accelerator' "
        "those a GPU takes, 'plain' and 'fast' force one form everywhere "
        "(keras_gmlp.layers._kernels.use_kernels)",
    )
    parser.add_argument("--json", help="also write the census to this JSON file")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"argument --batch-size: must be positive, got {args.batch_size}")
    return args


def block(name, policy):
    import keras

    from keras_gmlp import layers

    keras.config.set_dtype_policy(policy)
    try:
        if name.startswith("gmlp"):
            return layers.gMLPBlock(**BLOCKS[name])
        return layers.MixerBlock(**BLOCKS[name])
    finally:
        keras.config.set_dtype_policy("float32")


def lowered_step(layer, batch_size, mode, kernels):
    """One step of `layer` on random inputs, lowered by `jax.jit`."""
    import jax
    import jax.numpy as jnp

    shape = (batch_size, layer.sequence_length, layer.hidden_dim)
    x = jax.random.normal(jax.random.key(0), shape, "float32")
    layer.build(shape)
    trainable = [v.value for v in layer.trainable_variables]
    others = [v.value for v in layer.non_trainable_variables]

    def forward(trainable, x):
        y, _ = layer.stateless_call(trainable, others, x)
        return jnp.mean(jnp.square(y.astype("float32")))

    step = jax.value_and_grad(forward, argnums=(0, 1)) if mode == "train" else forward
    from keras_gmlp.layers._kernels import use_kernels

    with use_kernels(kernels):
        return jax.jit(step).lower(trainable, x)


def requested(stablehlo_text):
    """How many of each `REQUESTED` op the lowered step holds."""
    found = collections.Counter(STABLEHLO_OP.findall(stablehlo_text))
    return {op: found[op] for op in REQUESTED}


def computations(hlo_text):
    """(computation name, its instruction lines) of an HLO module's text."""
    name, lines = None, []
    for line in hlo_text.splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith("{"):
            if name:
                yield name, lines
            name, lines = line.split()[1 if line.startswith("ENTRY") else 0], []
        elif line.startswith(" "):
            lines.append(line)
    if name:
        yield name, lines


def census(hlo_text):
    """Per counted opcode, how many run on their own (`top`: each reads and
    writes memory) and inside fusions (`fused`); the fusions by kind; each
    transpose and copy with its shape, place and the JAX op it comes from.
    Reduction bodies (`region_*`) are left out."""
    counts = collections.defaultdict(collections.Counter)
    kinds = collections.Counter()
    listed = []
    for name, lines in computations(hlo_text):
        if name.lstrip("%").startswith("region_"):
            continue
        place = "fused" if "fused" in name else "top"
        for line in lines:
            match = INSTRUCTION.match(line)
            if not match:
                continue
            shape, opcode = match.group(2), match.group(3)
            if opcode in COUNTED:
                counts[opcode][place] += 1
            if opcode == "fusion":
                kinds[KIND.search(line).group(1) if KIND.search(line) else "?"] += 1
            if opcode in ("transpose", "copy"):
                source = OP_NAME.search(line)
                listed.append(
                    dict(
                        opcode=opcode,
                        shape=shape,
                        place=place,
                        op=source.group(1) if source else "",
                    )
                )
    return dict(
        counts={op: dict(counts[op]) for op in COUNTED},
        fusion_kinds=dict(kinds),
        transposes_and_copies=listed,
    )


def print_census(name, args, result):
    print(
        f"{name} {args.mode} ({args.dtype_policy}, batch {args.batch_size}, "
        f"kernels {args.kernels}):"
    )
    print(f"  asked of XLA (lowered StableHLO): {result['requested']}")
    for op, places in result["counts"].items():
        top, fused = places.get("top", 0), places.get("fused", 0)
        print(f"  {op:<12} {top:>4} on their own, {fused:>4} inside fusions")
    print(f"  fusions by kind: {result['fusion_kinds']}")
    for entry in result["transposes_and_copies"]:
        print(
            f"  {entry['opcode']:<9} {entry['place']:<5} {entry['shape']:<28} {entry['op']}"
        )


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    if keras.backend.backend() != "jax":
        sys.exit("hlo_census.py reads XLA's HLO: run it with KERAS_BACKEND=jax")
    results = {}
    for name in BLOCKS:
        layer = block(name, args.dtype_policy)
        lowered = lowered_step(layer, args.batch_size, args.mode, args.kernels)
        results[name] = census(lowered.compile().as_text())
        results[name]["requested"] = requested(lowered.as_text())
        print_census(name, args, results[name])
    if args.json:
        with open(args.json + ".partial", "w") as file:
            json.dump(dict(vars(args), blocks=results), file, indent=1)
        os.replace(args.json + ".partial", args.json)


if __name__ == "__main__":
    main()
