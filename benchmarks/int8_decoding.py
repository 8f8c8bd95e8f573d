"""int8 against float32 in PyTorch's eager decoding step on this CPU: the
step of a causal LM at a few rows, then each of its products alone.

Issue 67 asks for int8 at float speed at batch 1 and 4. Keras' int8
formula is about ten PyTorch ops a layer where float32 is one `addmm`, so
the step is timed whole and per product (float, int8 eager, and the int8
product under `torch.compile`, which fuses the ten into two kernels):

    .venv/bin/python benchmarks/int8_decoding.py
    .venv/bin/python benchmarks/int8_decoding.py --hidden-dim 512 --threads 2

Float32 and int8 run interleaved in one process, the best of `--rounds`
blocks of 20 steps (products: of 7 blocks of 2,000 calls). Random weights:
the speed does not depend on them.
"""

import functools
import os
import time

from _flags import FlagParser


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--hidden-dim", type=int, default=128)
    parser.add_argument("--intermediate-dim", type=int, default=512)
    parser.add_argument("--vocabulary-size", type=int, default=4000)
    parser.add_argument("--batch-sizes", default="1,4")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=30)
    return parser.parse_args(argv)


def causal_lm(args, mode):
    import keras

    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM

    keras.utils.set_random_seed(0)
    backbone = gMLPBackbone(
        vocabulary_size=args.vocabulary_size,
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=64,
        causal=True,
        dropout=0.0,
    )
    model = gMLPCausalLM(backbone)
    if mode != "float32":
        model.quantize(mode)
    return model


def best_seconds(function, calls, blocks):
    function()
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def step_rows(models, decoders, batch_sizes, rounds):
    import torch

    for batch in batch_sizes:
        steps = {}
        for mode, decoder in decoders.items():
            blocks = models[mode].backbone.gmlp_blocks
            cache = [block.initial_cache(batch, 64) for block in blocks]
            ids = torch.zeros(batch, dtype=torch.long)
            steps[mode] = lambda d=decoder, c=cache, i=ids: d(i, c, 10)
        best = {mode: [] for mode in steps}
        for _ in range(rounds):  # interleaved: the machine's load hits both
            for mode, step in steps.items():
                best[mode].append(best_seconds(step, 20, 1))
        us = {mode: min(times) * 1e6 for mode, times in best.items()}
        ratio = us["float32"] / us["int8"]
        print(
            f"step, batch {batch}: float32 {us['float32']:.0f} us, "
            f"int8 {us['int8']:.0f} us (int8 {ratio:.2f}x float32's speed)"
        )


def product_rows(decoders, batch_sizes):
    import torch

    products = {
        "expand": lambda d: d.blocks[0]["expand"],
        "output": lambda d: d.blocks[0]["output"],
        "output table": lambda d: d.output,
    }
    print("product, rows, inputs: float32 / int8 eager / int8 compiled, us")
    for name, find in products.items():
        float_dense, int8_dense = find(decoders["float32"]), find(decoders["int8"])
        forms = (
            functools.partial(float_dense, split=False),
            functools.partial(int8_dense, split=False),
            torch.compile(functools.partial(int8_dense, split=False), dynamic=True),
        )
        for batch in batch_sizes:
            x = torch.randn(batch, int8_dense.kernel.shape[0])
            us = [best_seconds(functools.partial(f, x), 2000, 7) * 1e6 for f in forms]
            print(
                f"{name}, {batch}, {x.shape[1]}: " + " / ".join(f"{u:.1f}" for u in us)
            )


def main(argv=None):
    args = parse_args(argv)
    os.environ["KERAS_BACKEND"] = "torch"
    import torch

    from keras_gmlp.models.gmlp import decoding

    torch.set_num_threads(args.threads)
    batch_sizes = [int(size) for size in args.batch_sizes.split(",")]
    models = {mode: causal_lm(args, mode) for mode in ("float32", "int8")}
    decoders = {mode: decoding.torch_decoder(m.backbone) for mode, m in models.items()}
    with torch.no_grad():
        step_rows(models, decoders, batch_sizes, args.rounds)
        product_rows(decoders, batch_sizes)


if __name__ == "__main__":
    main()
