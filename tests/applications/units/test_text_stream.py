"""The text programs' streamed input, against what the stated rules give by
hand: where a file's documents begin and end, which documents the train
stream yields when held-out parts are carved from the train files, the
batches one process reading several input shards takes, the batch after a
resume by replay, the TensorFlow trainer's rewound stream, and the last,
partial held-out window. tf.data only: the same on every backend."""

import gzip
import types

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent

# Lines ending in \n or \r\n; a line of spaces or tabs separates documents.
FIRST_FILE = "a b\r\nc\r\n \t \r\nd\r\n\r\n\r\n\tindented\r\nlast"
SECOND_FILE = "\n\none\n\t\ntwo\nthree\n  \n"


def documents_by_rule(text):
    """Runs of lines that are not blank (spaces and tabs only), each run
    joined with newlines, line endings dropped."""
    documents, current = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.strip(" \t"):
            current.append(line)
        elif current:
            documents.append("\n".join(current))
            current = []
    return documents + (["\n".join(current)] if current else [])


def texts(dataset):
    return [element.decode() for element in dataset.as_numpy_iterator()]


def test_documents_end_at_blank_lines_in_text_and_gzip_files(tmp_path):
    from _text_input import text_files

    plain, packed = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    plain.write_bytes(FIRST_FILE.encode())
    packed.write_bytes(gzip.compress(SECOND_FILE.encode()))
    first = ["a b\nc", "d", "\tindented\nlast"]
    second = ["one", "two\nthree"]
    assert documents_by_rule(FIRST_FILE) == first
    assert documents_by_rule(SECOND_FILE) == second
    assert texts(text_files.read_documents(str(plain))) == first
    assert texts(text_files.read_documents(str(packed))) == second
    # Two files read round-robin, a document of each in turn.
    both = text_files.file_documents([str(plain), str(packed)])
    assert texts(both) == ["a b\nc", "one", "d", "two\nthree", "\tindented\nlast"]


def stream_args(tmp_path, **flags):
    defaults = dict(
        input_shards=1,
        process_id=0,
        num_processes=1,
        shuffle_buffer=1,
        batch_size=4,
        seed=0,
        output_dir=tmp_path,
        save_every=1000,
    )
    return types.SimpleNamespace(**{**defaults, **flags})


def identity(documents):
    """Each document its own example, as (inputs, labels)."""
    return documents.map(lambda document: (document, document))


def taken(stream, steps):
    return [[d.decode() for d in stream.take()[0]] for _ in range(steps)]


def corpus_files(tmp_path, count, name="train"):
    names = [f"{name}-{i}" for i in range(count)]
    (tmp_path / f"{name}.txt").write_text("\n\n".join(names) + "\n")
    return names


@pytest.mark.parametrize("given", [(), ("validation",)])
def test_the_train_stream_never_yields_a_carved_held_out_document(tmp_path, given):
    """A held-out fraction of 0.2: of every 5 train-file documents, the
    first is a test document, the second a validation one (unless
    --validation-files is given), the other three train."""
    from _text_input.sources import file_sources
    from _text_training.training import training_stream

    names = corpus_files(tmp_path, 20)
    files = {part: None for part in ("validation", "test")}
    files["train"] = str(tmp_path / "train.txt")
    for part in given:
        corpus_files(tmp_path, 2, part)
        files[part] = str(tmp_path / f"{part}.txt")
    args = types.SimpleNamespace(**{f"{p}_files": f for p, f in files.items()})
    sources = file_sources(args, 0.2)
    test = names[0::5]
    carved_validation = [] if given else names[1::5]
    train = [n for n in names if n not in test and n not in carved_validation]
    assert texts(sources["test"].dataset()) == test
    validation = ["validation-0", "validation-1"] if given else carved_validation
    assert texts(sources["validation"].dataset()) == validation
    stream = training_stream(
        stream_args(tmp_path, shuffle_buffer=4), sources["train"].dataset(), identity
    )
    # Three passes over the train documents, shuffled.
    yielded = [d for batch in taken(stream, 3 * len(train) // 4) for d in batch]
    assert sorted(set(yielded)) == sorted(train)


def test_one_process_reading_two_input_shards_takes_both(tmp_path):
    """Two shards of one process: documents dealt round-robin, each shard
    giving half of the batch of 4, shard 0's half first."""
    import tensorflow as tf
    from _text_training.training import training_stream

    documents = [f"doc-{i}" for i in range(12)]
    args = stream_args(tmp_path, input_shards=2)
    stream = training_stream(
        args, tf.data.Dataset.from_tensor_slices(documents), identity
    )
    assert stream.shards == (0, 1)
    even, odd = documents[0::2], documents[1::2]
    expected = [even[0:2] + odd[0:2], even[2:4] + odd[2:4], even[4:6] + odd[4:6]]
    assert taken(stream, 3) == expected
    # Repeated: the fourth batch starts each shard's documents again.
    assert taken(stream, 1) == [even[0:2] + odd[0:2]]


def counting_stream(period, snapshots):
    """A BatchStream of batches [2k, 2k + 1] from a Python generator, which
    TensorFlow cannot checkpoint."""
    import itertools

    import tensorflow as tf
    from _text_input.stream import BatchStream
    from _text_input.stream import train_batches

    numbers = tf.data.Dataset.from_generator(
        lambda: itertools.count(), output_signature=tf.TensorSpec((), tf.int64)
    )
    # Shuffle buffers of 1 keep the order.
    batches = train_batches(numbers, lambda d: d.map(lambda x: (x, x)), 2, 0, (1, 1))
    return BatchStream(tf.data.Dataset.zip((batches,)), period, snapshots)


def test_a_resume_by_replay_takes_the_batch_an_uninterrupted_run_would(tmp_path):
    import json

    interrupted = counting_stream(3, tmp_path / "stream")
    for _ in range(5):  # interrupted at step 5; the last state is step 3's
        interrupted.take()
    state = tmp_path / "stream" / "step-3"
    assert json.loads((state / "position.json").read_text()) == {
        "step": 3,
        "replay": True,
    }
    resumed = counting_stream(3, tmp_path / "stream")
    resumed.restore(state)
    assert resumed.step == 3
    x, y = resumed.take()
    np.testing.assert_array_equal(x, [6, 7])  # step 4's batch: 2 * 3, 2 * 3 + 1
    np.testing.assert_array_equal(y, [6, 7])
    assert resumed.step == 4


def test_the_rewound_stream_starts_again_where_the_first_iteration_did(tmp_path):
    """The TensorFlow trainer iterates its input once to build, then again
    to train: the second iteration gives the first's batches again, then
    goes on, and the steps count each batch once."""
    from _text_input.stream import RewindOnce

    stream = counting_stream(1000, tmp_path / "stream")
    stream.take()  # a batch trained on before
    rewind = RewindOnce(stream, limit=4)
    first = rewind.iteration()
    assert [int(next(first)[0][0]) for _ in range(3)] == [2, 4, 6]
    second = rewind.iteration()
    assert [int(next(second)[0][0]) for _ in range(5)] == [2, 4, 6, 8, 10]
    assert stream.step == 6
    assert list(first) == []  # the first iteration stops once replaced
    with pytest.raises(RuntimeError, match="iterated 3 times"):
        next(rewind.iteration())


class DigitTokenizer:
    """Whitespace-separated numbers as ids; [CLS] is 2, [SEP] 3."""

    def token_to_id(self, token):
        return {"[CLS]": 2, "[SEP]": 3}[token]

    def __call__(self, text):
        import tensorflow as tf

        return tf.strings.to_number(tf.strings.split(text), tf.int32)


def memory_source(documents):
    import tensorflow as tf

    return types.SimpleNamespace(
        description="documents",
        dataset=lambda: tf.data.Dataset.from_tensor_slices(documents),
    )


def test_held_out_windows_keep_the_last_partial_window():
    """Windows of 4: [CLS] and 3 ids of the documents, each ended by
    [SEP] (3), the last padded with [PAD] (0); at most --eval-batches *
    --batch-size windows."""
    from _text_input.corpus import heldout_windows

    sources = {
        "validation": memory_source(["5 6", "7 8 9"]),
        "test": memory_source(["10 11 12 13 14 15 16"]),
    }
    args = types.SimpleNamespace(eval_batches=2, batch_size=2)
    windows = heldout_windows(sources, DigitTokenizer(), 4, args)
    # 5 6 [SEP] | 7 8 9 | [SEP]: three windows, the last padded.
    np.testing.assert_array_equal(
        windows["validation"], [[2, 5, 6, 3], [2, 7, 8, 9], [2, 3, 0, 0]]
    )
    # 10 11 12 | 13 14 15 | 16 [SEP]: the last padded.
    np.testing.assert_array_equal(
        windows["test"], [[2, 10, 11, 12], [2, 13, 14, 15], [2, 16, 3, 0]]
    )
    args.eval_batches = 1
    capped = heldout_windows(sources, DigitTokenizer(), 4, args)
    np.testing.assert_array_equal(capped["validation"], windows["validation"][:2])


def number_stream(period, snapshots, finish=None, shards=(0,)):
    """A TensorFlow-free StepStream whose batch k (from 0) is, per input
    shard s, ([k, s], [-k])."""
    from _text_input.stream import StepStream

    class NumberStream(StepStream):
        def next_batch(self):
            parts = [(np.array([self.step, s]), np.array([-self.step])) for s in shards]
            return self.join(parts)

    return NumberStream(period, snapshots, finish, shards)


def test_taken_batches_are_timed_counted_and_saved_where_periods_end(
    tmp_path, monkeypatch
):
    """A fake clock that moves 0.25 s a reading: each batch adds the
    0.25 s between its two readings. Two input shards, each finished."""
    import itertools
    import json
    import time

    readings = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: 100 + next(readings) * 0.25)

    def finish(step, shard, batch):
        return batch[0] * 10 + step, batch[1] + shard

    stream = number_stream(2, tmp_path / "states", finish, shards=(3, 5))
    batches = stream.batches()
    got = [next(batches) for _ in range(3)]
    for k, (x, y) in enumerate(got):
        np.testing.assert_array_equal(x, [11 * k, 30 + k, 11 * k, 50 + k])
        np.testing.assert_array_equal(y, [-k + 3, -k + 5])
    assert stream.step == 3 and stream.input_seconds == 0.75
    assert sorted(p.name for p in (tmp_path / "states").iterdir()) == ["step-2"]
    position = tmp_path / "states" / "step-2" / "position.json"
    assert json.loads(position.read_text()) == {"step": 2}


def test_a_failed_save_leaves_nothing_and_a_save_replaces_a_state(tmp_path):
    stream = number_stream(1000, tmp_path / "states")
    stream.step = 4
    folder = tmp_path / "states" / "step-4"
    folder.mkdir(parents=True)
    (folder / "stale").write_text("an older state")
    stream.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["position.json"]

    def full_disk(staging):
        (staging / "half").write_text("written before the disk filled")
        raise OSError("no space left")

    stream.write_state = full_disk
    with pytest.raises(OSError, match="no space left"):
        stream.save(tmp_path / "states" / "step-8")
    assert sorted(p.name for p in (tmp_path / "states").iterdir()) == ["step-4"]


def test_discarded_states_take_the_shared_folder_once_it_is_empty(tmp_path):
    first = number_stream(1, tmp_path / "stream" / "process-0")
    second = number_stream(1, tmp_path / "stream" / "process-1")
    first.take()
    second.take()
    first.discard_states()
    assert [p.name for p in (tmp_path / "stream").iterdir()] == ["process-1"]
    second.discard_states()
    assert not (tmp_path / "stream").exists()
    # A folder of another name is not the processes' shared one.
    other = number_stream(1, tmp_path / "states" / "process-0")
    other.take()
    other.discard_states()
    assert list((tmp_path / "states").iterdir()) == []


def test_a_train_input_that_runs_out_is_refused_naming_the_shards(tmp_path):
    import tensorflow as tf
    from _text_input.stream import BatchStream

    parts = tf.data.Dataset.from_tensor_slices(np.arange(2)).batch(1)
    stream = BatchStream(tf.data.Dataset.zip((parts,)), 10, tmp_path, shards=(1, 3))
    stream.take()
    stream.take()
    with pytest.raises(ValueError) as raised:
        stream.take()
    assert str(raised.value) == (
        "the train input ran out: an input shard has no documents (shards "
        "[1, 3]); use fewer --input-shards or more documents"
    )


def test_the_rewound_stream_replays_at_most_32_batches(tmp_path):
    """The first iteration keeps the batch taken to learn the signature and
    up to 32 more; a second iteration after more than 32 is refused."""
    from _text_input.stream import RewindOnce

    for ahead, refused in ((31, False), (32, True)):
        rewind = RewindOnce(number_stream(1000, tmp_path / "states"))
        first = rewind.iteration()
        for _ in range(1 + ahead):
            next(first)
        second = rewind.iteration()
        if not refused:
            assert int(next(second)[0][0]) == 0
            continue
        with pytest.raises(RuntimeError) as raised:
            next(second)
        assert str(raised.value) == (
            "the train stream was iterated 2 times and 33 batches ahead; it "
            "replays at most 32 batches once"
        )


def test_the_rewound_stream_is_a_dataset_of_its_batches_any_batch_size(tmp_path):
    """Its signature: each array's shape with the batch dimension left
    open, and its dtype; tf.data yields the stream's batches with it."""
    import tensorflow as tf
    from _text_input.stream import RewindOnce
    from _text_input.stream import StepStream

    class Rows(StepStream):
        def next_batch(self):
            rows = np.full((2, 3), self.step, "int32")
            return rows, np.full((2,), self.step / 2, "float32")

    rewind = RewindOnce(Rows(1000, tmp_path / "states"))
    assert rewind.signature == (
        tf.TensorSpec((None, 3), tf.int32),
        tf.TensorSpec((None,), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(
        rewind.iteration, output_signature=rewind.signature
    )
    for step, (rows, halves) in enumerate(dataset.take(3).as_numpy_iterator()):
        np.testing.assert_array_equal(rows, np.full((2, 3), step))
        np.testing.assert_array_equal(halves, [step / 2, step / 2])


def test_bytes_that_are_not_utf8_become_unknown_word_pieces():
    """Windows of 7: [CLS], then alpha [UNK] beta [SEP] beta [SEP]: the byte
    0xFF is U+FFFD, a word piece the vocabulary lacks."""
    import tensorflow as tf
    from _text_input.windows import token_windows

    from keras_gmlp.models import gMLPTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "alpha", "beta"]
    tokenizer = gMLPTokenizer(vocabulary=words, lowercase=True)
    documents = tf.data.Dataset.from_tensor_slices([b"alpha \xff beta", b"beta"])
    windows = list(token_windows(documents, tokenizer, 7).as_numpy_iterator())
    pieces = ["[CLS]", "alpha", "[UNK]", "beta", "[SEP]", "beta", "[SEP]"]
    assert [w.tolist() for w in windows] == [[words.index(p) for p in pieces]]


def test_take_arrays_stacks_the_first_elements_or_gives_none():
    import tensorflow as tf
    from _text_input.windows import take_arrays

    numbers = tf.data.Dataset.range(5).map(lambda i: {"a": i, "b": (2 * i, 3 * i)})
    taken = take_arrays(numbers, 3)
    np.testing.assert_array_equal(taken["a"], [0, 1, 2])
    np.testing.assert_array_equal(taken["b"][0], [0, 2, 4])
    np.testing.assert_array_equal(taken["b"][1], [0, 3, 6])
    assert take_arrays(numbers.take(0), 3) is None


def test_a_replayed_state_counts_the_batches_already_taken(tmp_path):
    """A stream that took two batches, restored to step 3's state (kept by
    replay): one batch skipped, then step 4's."""
    interrupted = counting_stream(3, tmp_path / "stream")
    for _ in range(3):
        interrupted.take()
    resumed = counting_stream(3, tmp_path / "other")
    resumed.take(), resumed.take()
    resumed.restore(tmp_path / "stream" / "step-3")
    x, _ = resumed.take()
    np.testing.assert_array_equal(x, [6, 7])


def identity_pairs(numbers):
    return numbers.map(lambda x: (x, x))


def test_a_checkpointed_state_is_not_replayed(tmp_path):
    import json

    import tensorflow as tf
    from _text_input.stream import BatchStream
    from _text_input.stream import train_batches

    def numbers_stream(folder):
        numbers = tf.data.Dataset.range(100)
        batches = train_batches(numbers, identity_pairs, 2, 0, (1, 1))
        return BatchStream(tf.data.Dataset.zip((batches,)), 2, folder)

    stream = numbers_stream(tmp_path / "stream")
    stream.take(), stream.take()
    state = tmp_path / "stream" / "step-2"
    position = json.loads((state / "position.json").read_text())
    assert position == {"step": 2, "replay": False}
    assert sorted(p.name for p in state.iterdir())[0].startswith("iterator")
    resumed = numbers_stream(tmp_path / "other")
    resumed.restore(state)
    x, _ = resumed.take()
    np.testing.assert_array_equal(x, [4, 5])


def test_each_pass_over_the_documents_is_shuffled_anew():
    """Eight documents, a document buffer of eight, an example buffer of
    one, batches of eight: each batch is one pass, a permutation of the
    documents, none in their order, no two alike (seed 0)."""
    import tensorflow as tf
    from _text_input.stream import train_batches

    documents = tf.data.Dataset.range(8)
    batches = train_batches(documents, lambda d: d.map(lambda x: (x, x)), 8, 0, (8, 1))
    passes = [tuple(x) for x, _ in batches.take(3).as_numpy_iterator()]
    assert all(sorted(p) == list(range(8)) for p in passes)
    assert tuple(range(8)) not in passes and len(set(passes)) == 3


def test_the_training_options_keep_the_order_and_ignore_external_state():
    import tensorflow as tf
    from _text_input.stream import training_options

    options = training_options(tf.data.Dataset.range(3)).options()
    assert options.deterministic is True
    ignore = tf.data.experimental.ExternalStatePolicy.IGNORE
    assert options.experimental_external_state_policy == ignore


def test_the_shuffled_examples_follow_the_seed_in_batches_of_a_fixed_size():
    """Documents in order (a buffer of one), examples shuffled in a buffer
    of 16: the same seed gives the same batches, another seed others; the
    batch size is part of the batches' static shape."""
    import tensorflow as tf
    from _text_input.stream import train_batches

    def first_batches(seed):
        documents = tf.data.Dataset.range(64)
        batches = train_batches(documents, identity_pairs, 8, seed, (1, 16))
        assert batches.element_spec[0].shape == (8,)
        return [x.tolist() for x, _ in batches.take(3).as_numpy_iterator()]

    assert first_batches(5) == first_batches(5)
    assert first_batches(5) != first_batches(6)
    assert first_batches(5)[0] != list(range(8))


def test_discarding_states_never_saved_is_quiet(tmp_path):
    stream = number_stream(1000, tmp_path / "stream" / "process-0")
    stream.take()
    stream.discard_states()
    assert list(tmp_path.iterdir()) == []


def test_fed_batches_are_timed_from_the_clock(tmp_path, monkeypatch):
    import itertools
    import time

    readings = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: 100 + next(readings) * 0.25)
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    stream = number_stream(1000, tmp_path / "states")
    fed = stream.feed()
    firsts = [int(next(fed)[0][0]) for _ in range(2)]
    fed.close()
    assert firsts == [0, 1] and stream.input_seconds == 0.5


def test_under_a_strategy_tensorflow_is_fed_a_dataset_that_rewinds_once(
    tmp_path, monkeypatch
):
    """The TensorFlow trainer's input under a tf.distribute strategy (the
    backend's name patched: the same tf.data on every backend)."""
    import tensorflow as tf

    monkeypatch.setattr(keras.backend, "backend", lambda: "tensorflow")
    stream = number_stream(1000, tmp_path / "states")
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        fed = stream.feed()
    assert isinstance(fed, tf.data.Dataset)
    building = iter(fed)
    assert [int(next(building)[0][0]) for _ in range(3)] == [0, 1, 2]
    training = iter(fed)
    assert [int(next(training)[0][0]) for _ in range(4)] == [0, 1, 2, 3]
