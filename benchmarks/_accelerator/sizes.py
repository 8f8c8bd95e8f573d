"""What the check runs, at the card's sizes and at `--quick` (CPU) sizes.

The models' shapes come from benchmarks/throughput.py (one table for the
benchmarks): gMLP-S/16 and Mixer-B/16 as timm's `gmlp_s16_224` and
`mixer_b16_224`, gMLP-base and aMLP-base against BERT-base.
"""

import throughput

TIMM_NAMES = {"gmlp_s16": "gmlp_s16_224", "mixer_b16": "mixer_b16_224"}

FULL = dict(
    image_models=("gmlp_s16", "mixer_b16"),
    # What the speed runs cover (the checks cover every image model).
    speed_image_models=("gmlp_s16", "mixer_b16"),
    speed_text_models=("gmlp_base", "amlp_base"),
    speed_precisions=("bfloat16", "float32"),
    image_size=224,
    image_batch=128,
    parity_batch=4,
    text_models=("gmlp_base", "amlp_base"),
    text_length=512,
    text_batch=32,
    # BERT's 76 predictions of 512 tokens (15%).
    masked_per_sequence=76,
    memory_probe_batches=(8, 32),
    paper_batch=256,
    generation=dict(
        num_layers=6,
        hidden_dim=256,
        intermediate_dim=1536,
        attention_dim=64,
        vocabulary_size=1000,
        prompt_length=16,
        new_tokens=64,
        batches=(1, 32),
    ),
    # Cached generation against full-forward greedy decoding: small, so
    # that both compile in seconds (the full size took 66 s on JAX).
    greedy_check=dict(
        num_layers=2,
        hidden_dim=64,
        intermediate_dim=256,
        attention_dim=32,
        vocabulary_size=1000,
        prompt_length=8,
        new_tokens=8,
    ),
    matmul_size=8192,
    warmup=3,
    repeats=10,
)

# A CPU minute in CI: the same code, one model and precision a kind.
QUICK = dict(
    FULL,
    speed_image_models=("gmlp_s16",),
    speed_text_models=("gmlp_base",),
    speed_precisions=("bfloat16",),
    image_size=64,
    image_batch=2,
    parity_batch=2,
    text_length=32,
    text_batch=2,
    masked_per_sequence=5,
    memory_probe_batches=(1, 2),
    paper_batch=8,
    generation=dict(
        FULL["generation"],
        num_layers=2,
        hidden_dim=32,
        intermediate_dim=64,
        attention_dim=16,
        vocabulary_size=100,
        prompt_length=4,
        new_tokens=6,
        batches=(2,),
    ),
    greedy_check=dict(
        FULL["greedy_check"],
        hidden_dim=32,
        intermediate_dim=64,
        attention_dim=16,
        vocabulary_size=100,
        prompt_length=4,
        new_tokens=6,
    ),
    matmul_size=256,
    warmup=1,
    repeats=2,
)


def sizes(quick):
    return QUICK if quick else FULL


# The same kinds of model at `--quick`, two blocks of width 32 (timm and
# BERT are built with the same widths and ratios).
QUICK_MODELS = {
    "gmlp_s16": dict(kind="gmlp", num_blocks=2, hidden_dim=32, mlp_dim=192),
    "mixer_b16": dict(
        kind="mixer", num_blocks=2, hidden_dim=32, mlp_dim=128, tokens_mlp_dim=16
    ),
    "gmlp_base": dict(kind="gmlp", num_blocks=2, hidden_dim=32, mlp_dim=64),
    "amlp_base": dict(
        kind="gmlp", num_blocks=2, hidden_dim=32, mlp_dim=64, attention_dim=16
    ),
    "bert_base": dict(kind="bert", num_blocks=2, hidden_dim=32, mlp_dim=64, heads=2),
}


def image_config(name, quick):
    """throughput.py's row for `name`, or its `--quick` size."""
    return QUICK_MODELS[name] if quick else throughput.IMAGE_MODELS[name]


def text_config(name, quick):
    return QUICK_MODELS[name] if quick else throughput.TEXT_MODELS[name]


def image_flops(name, quick, training):
    """FLOPs of one image (3x the forward pass when training)."""
    size = sizes(quick)["image_size"]
    flops = throughput.image_flops(image_config(name, quick), size)
    return 3 * flops if training else flops


def text_flops_per_token(name, quick, training):
    """The encoder's FLOPs per token (no embedding or MLM head)."""
    length = sizes(quick)["text_length"]
    flops = throughput.text_flops_per_token(text_config(name, quick), length)
    return 3 * flops if training else flops
