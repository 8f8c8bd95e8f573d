"""The fine-tuning program's training: the task, the classifier and the
held-out arrays prepared (with the majority-class baseline), then the
classifier fitted on the streamed train examples, the checkpoint chosen on
the validation split."""

from _text_input.sources import PARTS

from . import data
from .model import load_classifier


def prepare(parser, args):
    """The task, the classifier and the held-out arrays, with the
    majority-class baseline; fills in the step flags. Refusals come before
    training."""
    import keras
    import numpy as np
    from _text_input.errors import refuse
    from _text_training.training import resolve_steps

    sources, class_names, names, task_name = data.load_task(parser, args)
    keras.utils.set_random_seed(args.seed)
    classifier = load_classifier(args, len(class_names))
    args.sequence_length = classifier.preprocessor.sequence_length
    heldout = data.heldout_arrays(classifier.preprocessor, sources, args)
    counts = data.train_label_counts(sources["train"], len(class_names))
    if counts.sum() == 0:
        refuse(f"the train split ({sources['train'].description}) has no examples")
    # The last batch counted whole: the stream repeats.
    resolve_steps(parser, args, -(-int(counts.sum()) // args.batch_size))
    majority = int(counts.argmax())
    task = {
        "name": task_name,
        "sources": sources,
        "names": names,
        "classes": class_names,
        "counts": counts,
        "majority": majority,
        "majority_accuracy": float(np.mean(heldout["test"][1] == majority)),
    }
    print_task(task, heldout)
    return task, classifier, heldout


def print_task(task, heldout):
    def size(part):
        description = task["sources"][part].description
        if part in heldout:
            return f"{len(heldout[part][1])} {part} ({description})"
        return f"{int(task['counts'].sum())} {part} ({description})"

    classes = task["classes"]
    print(
        f"Task: {task['name']}; examples: {', '.join(size(p) for p in PARTS)}; "
        f"{len(classes)} classes; always guessing the most common train class "
        f"({classes[task['majority']]}) scores {task['majority_accuracy']:.4f} on test.",
        flush=True,
    )


def train_classifier(args, run, classifier, train_source, validation):
    """Fits `classifier` on the streamed train examples, choosing the
    checkpoint on the packed `validation` data; returns (trainer,
    history)."""
    import keras
    from _text_training.training import fit_task
    from _text_training.training import training_stream

    stream = training_stream(
        args,
        train_source.dataset(),
        lambda examples: data.packed(classifier.preprocessor, examples),
    )
    compile_args = {
        "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        "metrics": ["accuracy"],
    }
    return fit_task(
        classifier,
        stream,
        validation,
        args,
        run,
        compile_args,
        monitor="val_accuracy",
        mode="max",
    )
