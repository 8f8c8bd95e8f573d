"""The paper's masked-language-model encoders, one row each.

Liu et al. 2021, Table 4: depth, widths, tiny-attention size and the
paper's parameter count (BERT's 30,522-token vocabulary, sequences of 128
tokens, tied output embeddings). `keras_gmlp.applications.gMLPBase` and its
siblings, the tests and the programs read it; keys are the default model
names (what `pretrain_mlm.py --model` takes).
"""

GMLP_TEXT_VARIANTS = {
    "gmlp_base": {
        "builder": "gMLPBase",
        "title": "gMLP-base",
        "num_layers": 48,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": None,
        "paper_params": 130_000_000,
    },
    "gmlp_large": {
        "builder": "gMLPLarge",
        "title": "gMLP-large",
        "num_layers": 96,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": None,
        "paper_params": 365_000_000,
    },
    "amlp_base": {
        "builder": "aMLPBase",
        "title": "aMLP-base",
        "num_layers": 36,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": 64,
        "paper_params": 109_000_000,
    },
    "amlp_large": {
        "builder": "aMLPLarge",
        "title": "aMLP-large",
        "num_layers": 72,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": 128,
        "paper_params": 316_000_000,
    },
}

# The arguments of `gMLPBackbone` that a row fixes.
BACKBONE_ARGUMENTS = ("num_layers", "hidden_dim", "intermediate_dim", "attention_dim")
