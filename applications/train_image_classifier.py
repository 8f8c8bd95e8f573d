"""Train a gMLP or MLP-Mixer image classifier.

The offline default trains a small gMLP (4 blocks, width 64, 16x16 images in
4x4 patches) on scikit-learn's bundled handwritten digits for 8 epochs; it
reaches about 98% test accuracy in one to three minutes on a laptop CPU:

    python3 applications/train_image_classifier.py

Everything is written to --output-dir: best.keras (best validation
accuracy), final.keras, history.csv, training_curves.png,
confusion_matrix.png, spatial_weights.png (gMLP) or token_mixing_units.png
(Mixer), and summary.json.
The models output logits. An interrupted run (Ctrl-C, a kill) resumes from
its last completed epoch when rerun with the same --output-dir.

Larger jobs:

    # gMLP-S on ImageNet with the paper's DeiT-style recipe
    python3 applications/train_image_classifier.py --recipe paper \\
        --model gmlp_s16 --dataset imagenet2012 --data-dir ~/tensorflow_datasets
    # fine-tune timm's ImageNet gMLP-S on CIFAR-10 at 224x224
    python3 applications/train_image_classifier.py --model gmlp_s16 \\
        --weights gmlp_s16_224.safetensors --dataset cifar10 --image-size 224

Any tensorflow-datasets image-classification dataset works with --dataset;
it is evaluated on its labelled test split, or on "validation" where the
test labels are withheld (imagenet2012), or on a held-out tenth of "train".
"""

import time

from _image_classifier import recipe
from _shared.interrupt import run


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return recipe.parse_args(__doc__, argv)


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    from _image_classifier import data as image_data

    builder = None
    if args.dataset != "digits":
        builder = image_data.tfds_builder(parser, args)

    import keras
    from _image_classifier import model as image_model
    from _image_classifier import reporting
    from _image_classifier import training

    training.prepare_backend(args)
    state = image_model.read_start_weights(parser, args) if args.weights else None
    distribution = training.set_distribution(parser, args)
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")
    data, channels = image_data.load_data(parser, args, builder, state)
    model, start = image_model.build_model(
        parser, args, channels, data["classes"], state
    )
    batches = image_data.training_batches(args, data, in_memory=builder is None)
    training.compile_model(model, args, batches["steps_per_epoch"])
    reporting.print_start(args, model, start, data, batches, distribution)
    history = training.fit(model, args, batches)
    run_facts = {
        "data": data,
        "batches": batches,
        "start": start,
        "distribution": distribution,
    }
    reporting.report(args, model, run_facts, history, started)


if __name__ == "__main__":
    run(main)
