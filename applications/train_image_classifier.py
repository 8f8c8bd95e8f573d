"""Train a gMLP or MLP-Mixer image classifier.

The offline default trains a small gMLP (4 blocks, width 64, 16x16 images in
4x4 patches) on scikit-learn's bundled handwritten digits for 8 epochs; it
reaches about 98% test accuracy in about 30 s on a 2-core CPU (longer
where other work shares the cores):

    .venv/bin/python applications/train_image_classifier.py

The digits are split 70/10/20: the validation split chooses the best epoch
(and, with --patience, stops training), and the test split scores that
model once, at the end. Everything is written to --output-dir: best.keras
(best validation accuracy), final.keras (last epoch), history.csv,
training_curves.png, confusion_matrix.png, spatial_weights.png (gMLP) or
token_mixing_units.png (Mixer), summary.json (which split is which, the
parameters and how many trained) and run_state.json. The models output
logits. An interrupted run (Ctrl-C, a kill) resumes from its last completed
epoch, or after training from the chosen weights, when rerun with the same
--output-dir; a finished one says so (--restart trains it again).

--quantize int8 (or float8, int4) also scores a quantized copy of the chosen
model (`Model.quantize`: the Dense kernels) on the test split, beside
float32's in summary.json (test_accuracy_int8, test_loss_int8), and saves
it as best_int8.keras; best.keras and final.keras stay float. It is not a
model flag: a run resumed with it scores the copy at the end, but a finished
run only says it is finished (--restart trains it again).

--lora-rank N fine-tunes --weights with LoRA (keras_gmlp.applications.
enable_lora): rank-N factors beside the frozen kernels of the blocks'
channel projections train, with those layers' biases and the head. The
saved models hold each kernel merged with its factors. With
--quantize-base int8 the frozen body is int8 first (QLoRA's recipe): the
float factors train beside int8 kernels, and the saved models hold each
kernel merged with its factors and quantized again.

Larger jobs:

    # gMLP-S on ImageNet with the paper's DeiT-style recipe
    .venv/bin/python applications/train_image_classifier.py --recipe paper \\
        --model gmlp_s16 --dataset imagenet2012 --data-dir ~/tensorflow_datasets
    # fine-tune timm's ImageNet gMLP-S on CIFAR-10 at 224x224
    .venv/bin/python applications/train_image_classifier.py --model gmlp_s16 \\
        --weights gmlp_s16_224.safetensors --dataset cifar10 --image-size 224
    # the same with LoRA: rank-8 factors on the blocks' channel projections,
    # their biases and the head train, the other weights stay frozen
    .venv/bin/python applications/train_image_classifier.py --model gmlp_s16 \\
        --weights gmlp_s16_224.safetensors --dataset cifar10 --image-size 224 \\
        --lora-rank 8

Any tensorflow-datasets image-classification dataset works with --dataset.
Its test split is "test", or "validation" where the test labels are
withheld (imagenet2012) or there is no "test"; its validation split is
"validation" when that is not the test split, else the last tenth of
"train" (hundredth for ImageNet); without either, "train" is cut 80/10/10.
"""

import time

from _image_classifier import recipe
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _shared.tensorflow_input import keep_tensorflow_off_gpus


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return recipe.parse_args(__doc__, argv)


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, recipe.MODEL_FLAGS)
    quiet_tensorflow_logs()
    from _image_classifier import data as image_data

    builder = None
    if args.dataset != "digits":
        builder = image_data.tfds_builder(parser, args)

    import keras

    keep_tensorflow_off_gpus()  # before TensorFlow runs anything
    from _image_classifier import model as image_model
    from _image_classifier import reporting
    from _image_classifier import training
    from _shared import distribute

    # Before the first computation: the processes join first.
    placement = distribute.start(parser, args, auto_shard=builder is not None)
    training.prepare_backend(args)
    state = image_model.read_start_weights(parser, args) if args.weights else None
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")
    data, channels = image_data.load_data(parser, args, builder, state)
    with placement.scope():
        model, start = image_model.build_model(
            parser, args, channels, data["classes"], state
        )
        batches = image_data.training_batches(args, data, in_memory=builder is None)
        training.compile_model(model, args, batches["steps_per_epoch"])
        reporting.print_start(args, model, start, data, batches, placement.description)
        history = training.fit(model, args, batches, run_state)
        run_facts = {
            "data": data,
            "batches": batches,
            "start": start,
            "distribution": placement.description,
        }
        reporting.report(args, model, run_facts, history, started)
    run_state.finish()


if __name__ == "__main__":
    run(main)
