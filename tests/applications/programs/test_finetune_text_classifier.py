"""applications/finetune_text_classifier.py: the --fast default from the
fast pretraining's preset, GLUE tasks through tfds mock data, the offline
task's split, and the errors.

Cost per backend: three tiny fine-tuning runs (plus the shared fast
pretraining if test_pretrain_mlm.py did not run first).
"""

import types

import keras
import numpy as np
import pytest
from _text_classifier import data as task_data
from _text_classifier import offline_tasks

from tests.applications.programs._text_program_helpers import fast_pretraining_dir
from tests.applications.programs._text_program_helpers import leftovers
from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs._text_program_helpers import run_command


def test_fast_default_writes_outputs(tmp_path, capsys):
    preset = fast_pretraining_dir() / "final_preset"
    program = load_program("finetune_text_classifier")
    summary = program.main(
        ["--fast", "--preset", str(preset), "--output-dir", str(tmp_path)]
    )
    for name in (
        "history.csv",
        "training_curves.png",
        "confusion_matrix.png",
        "summary.json",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    for preset_name in ("best_preset", "final_preset"):
        assert (tmp_path / preset_name / "config.json").is_file()
        assert (tmp_path / preset_name / "tokenizer.json").is_file()
    assert leftovers(tmp_path) == []
    # Four classes cut to equal sizes: the majority class is a quarter.
    assert summary["majority_class_accuracy"] == 0.25
    assert summary["classes"] == ["asyncio", "email", "importlib", "xml"]
    # The reported test accuracy, recomputed from the saved best preset on
    # the program's own (seeded) test split, as a user would load it.
    from keras_gmlp.models import gMLPTextClassifier

    data, _, _ = offline_tasks.offline_task(
        types.SimpleNamespace(test_fraction=0.25, fast=True)
    )
    classifier = gMLPTextClassifier.from_preset(str(tmp_path / "best_preset"))
    logits = classifier.predict(data["test"]["texts"][0], batch_size=64, verbose=0)
    predictions = np.argmax(logits, axis=-1)
    assert summary["accuracy"] == pytest.approx(
        np.mean(predictions == data["test"]["labels"])
    )
    assert summary["backend"] == keras.backend.backend()
    assert [summary["splits"][p]["split"] for p in ("train", "validation", "test")] == [
        "train module files",
        "validation module files",
        "test module files",
    ]
    printed = capsys.readouterr().out
    assert (
        f"accuracy {summary['accuracy']:.4f} vs majority-class baseline 0.2500"
        in printed
    )


def test_lora_rank_trains_the_factors_and_head_only(tmp_path):
    """--lora-rank: the encoder's weights come out of fine-tuning as the
    pretrained preset has them, but for the adapted projections (Keras
    saves a LoRA layer's kernel merged with its factors)."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPTextClassifier

    preset = fast_pretraining_dir() / "final_preset"
    program = load_program("finetune_text_classifier")
    flags = ["--fast", "--steps", "2", "--save-every", "2", "--eval-every", "2"]
    summary = program.main(
        [
            *flags,
            "--lora-rank",
            "2",
            "--preset",
            str(preset),
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert 0 < summary["trainable_parameters"] < summary["parameters"] / 2
    tuned = gMLPTextClassifier.from_preset(str(tmp_path / "final_preset")).backbone
    tuned = {w.path: keras.ops.convert_to_numpy(w) for w in tuned.weights}
    adapted_changed = []
    for weight in gMLPBackbone.from_preset(str(preset)).weights:
        before, after = keras.ops.convert_to_numpy(weight), tuned[weight.path]
        if weight.path.split("/")[-2] in ("expand", "output"):
            adapted_changed.append(not np.array_equal(before, after))
        else:
            np.testing.assert_array_equal(after, before, weight.path)
    assert any(adapted_changed)


def test_lora_on_an_int8_encoder_trains_what_float_lora_trains(tmp_path):
    """--quantize-base int8 --lora-rank: the encoder's kernels int8 (in the
    run and in its preset), the factors and the head float and the only
    weights that train, as many as LoRA on the float encoder trains."""
    from keras_gmlp.models import gMLPTextClassifier

    preset = fast_pretraining_dir() / "final_preset"
    program = load_program("finetune_text_classifier")
    flags = ["--fast", "--steps", "2", "--save-every", "2", "--eval-every", "2"]
    flags += ["--lora-rank", "2", "--quantize-base", "int8"]
    summary = program.main(
        [*flags, "--preset", str(preset), "--output-dir", str(tmp_path)]
    )
    float_lora = gMLPTextClassifier.from_preset(str(preset), num_classes=4)
    float_lora.backbone.enable_lora(2)
    expected = sum(int(np.prod(w.shape)) for w in float_lora.trainable_weights)
    assert summary["trainable_parameters"] == expected
    tuned = gMLPTextClassifier.from_preset(str(tmp_path / "final_preset"))
    block = tuned.backbone.gmlp_blocks[0]
    assert block.expand_dense.quantization_mode == "int8"
    assert block.output_dense.quantization_mode == "int8"
    assert tuned.output_dense.quantization_mode is None


def test_offline_task_splits_by_module_file():
    args = types.SimpleNamespace(test_fraction=0.25, fast=False)
    data, classes, _ = offline_tasks.offline_task(args)
    train, validation, test = data["train"], data["validation"], data["test"]
    assert set(train["files"]).isdisjoint(test["files"])
    assert set(train["files"]).isdisjoint(validation["files"])
    assert set(validation["files"]).isdisjoint(test["files"])
    for part in (train, validation, test):
        counts = np.bincount(part["labels"], minlength=len(classes))
        assert len(set(counts)) == 1 and counts[0] > 10
        assert len(part["texts"][0]) == len(part["labels"])
    # Each class's paragraphs come from its own package.
    assert all(name.split("/")[0] in classes for name in train["files"])


@pytest.mark.backend_independent
@pytest.mark.parametrize("same, pairs_per_paragraph", [("module", 1), ("package", 3)])
def test_pairs_are_balanced_and_split_by_module(same, pairs_per_paragraph):
    """--offline-task same-module / same-package: label 1 exactly when one
    module file (one package) of the pair's split holds both paragraphs;
    the other pairs come from two files of one package (two packages); no
    file gives paragraphs to two splits; --pairs-per-paragraph pairs start
    from each first paragraph, each with another partner (packages have
    partners enough for no pair to come twice)."""
    from keras_gmlp.utils import text_corpus

    args = types.SimpleNamespace(
        test_fraction=0.25, fast=False, pairs_per_paragraph=pairs_per_paragraph
    )
    data, classes, _ = offline_tasks.paragraph_pair_task(args, same)
    assert classes == [f"other {same}", f"same {same}"]
    files = {part: set(data[part]["files"]) for part in offline_tasks.PARTS}
    assert not files["train"] & files["test"]
    assert not files["train"] & files["validation"]
    assert not files["validation"] & files["test"]
    for part in offline_tasks.PARTS:
        paragraphs = {
            name: {
                paragraph
                for docstring in text_corpus.module_docstrings(name)
                for paragraph in text_corpus.paragraphs(docstring)
            }
            for name in files[part]
        }
        first, second = data[part]["texts"]
        labels = data[part]["labels"]
        assert abs(labels.mean() - 0.5) <= 1 / len(labels), part
        assert len(labels) == pairs_per_paragraph * len(set(first)), part
        assert len(set(zip(first, second))) == len(labels), part
        for a, b, label in zip(first, second, labels):
            assert a != b
            homes = {
                text: {n for n, texts in paragraphs.items() if text in texts}
                for text in (a, b)
            }
            if same == "package":
                homes = {t: {n.split("/")[0] for n in h} for t, h in homes.items()}
            assert bool(homes[a] & homes[b]) == bool(label), (part, a, b)
            packages = {n.split("/")[0] for h in homes.values() for n in h}
            if same == "module":
                assert len(packages) == 1, (a, b)
    # The pairs reach the preprocessor as two segments.
    sources = task_data.memory_task_sources(data)
    (texts, label) = next(iter(sources["test"].dataset()))
    assert len(texts) == 2 and int(label) == data["test"]["labels"][0]


# Reading and packing the tasks is tf.data's on every backend; fine-tuning
# is tested per backend by test_fast_default_writes_outputs.
@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "dataset, split, num_classes, segments",
    [("glue/sst2", "validation", 2, 1), ("glue/mnli", "validation_matched", 3, 2)],
)
def test_glue_tasks_with_mock_data(
    tmp_path, monkeypatch, dataset, split, num_classes, segments
):
    tfds = pytest.importorskip("tensorflow_datasets")
    preset = fast_pretraining_dir() / "final_preset"
    program = load_program("finetune_text_classifier")
    seen = {}
    packed = task_data.packed

    def recording_packed(preprocessor, examples):
        seen["segments"] = len(examples.element_spec[0])
        return packed(preprocessor, examples)

    monkeypatch.setattr(task_data, "packed", recording_packed)
    with tfds.testing.mock_data(num_examples=12):
        summary = program.main(
            [
                "--fast",
                "--preset",
                str(preset),
                "--dataset",
                dataset,
                "--data-dir",
                str(tmp_path / "tfds"),
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
    assert summary["splits"]["test"]["split"] == split
    # Carved from the train split by position, as the test split is named.
    assert summary["splits"]["validation"]["split"].startswith("split 'train'")
    assert len(summary["classes"]) == num_classes
    assert seen["segments"] == segments
    assert (tmp_path / "out" / "final_preset" / "config.json").is_file()


def test_missing_preset_names_the_command(tmp_path):
    # Run from an empty folder, where the default preset does not exist.
    result = run_command("finetune_text_classifier.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "outputs/pretrain_mlm/final_preset does not exist" in result.stderr
    assert (
        "python applications/pretrain_mlm.py --output-dir outputs/pretrain_mlm"
        in result.stderr
    )
    assert not (tmp_path / "outputs" / "finetune_text_classifier").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--epochs", "0"], "--epochs"),
        (["--data-dir", "x"], "--dataset"),
        (["--dropout", "1.5"], "--dropout"),
        (["--lora-rank", "0"], "--lora-rank"),
    ],
)
def test_flag_errors_exit_2(tmp_path, flags, message):
    result = run_command(
        "finetune_text_classifier.py", *flags, "--output-dir", tmp_path / "o"
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_text_files_are_labelled_by_their_folder(tmp_path):
    # Keras' text_dataset_from_directory layout: one folder per class.
    for label, word in (("neg", "bad"), ("pos", "good")):
        (tmp_path / "train" / label).mkdir(parents=True)
        for index in range(2):
            documents = [f"{word} {word} {index} {n}" for n in range(10)]
            (tmp_path / "train" / label / f"{index}.txt").write_text(
                "\n\n".join(documents) + "\n"
            )
    program = load_program("finetune_text_classifier")
    parser, args = program.parse_args(
        [
            "--preset",
            str(fast_pretraining_preset_stub(tmp_path)),
            "--output-dir",
            str(tmp_path / "out"),
            "--train-files",
            str(tmp_path / "train" / "*" / "*.txt"),
        ]
    )
    sources, classes, _ = task_data.file_task(parser, args)
    assert classes == ["neg", "pos"]
    seen = {}
    for part in ("train", "validation", "test"):
        examples = sources[part].dataset().as_numpy_iterator()
        seen[part] = [(texts[0].decode(), int(label)) for texts, label in examples]
        for text, label in seen[part]:
            assert text.split()[0] == ("bad", "good")[label]
    # Every document once, the held-out parts carved by position.
    assert sum(len(part) for part in seen.values()) == 40
    assert len(seen["test"]) == len(seen["validation"]) == 40 // 4
    (tmp_path / "train" / "other.txt").write_text("no class folder\n")
    _, args = program.parse_args(
        [
            "--preset",
            str(tmp_path / "stub"),
            "--output-dir",
            str(tmp_path / "out"),
            "--train-files",
            str(tmp_path / "train" / "*.txt"),
        ]
    )
    with pytest.raises(SystemExit):
        task_data.file_task(parser, args)


def fast_pretraining_preset_stub(tmp_path):
    """A folder that passes the --preset flag check (file_task reads no
    preset)."""
    stub = tmp_path / "stub"
    stub.mkdir(exist_ok=True)
    (stub / "config.json").write_text("{}")
    return stub
