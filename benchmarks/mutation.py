"""Mutation testing of the library's and the programs' pure-Python modules
with mutmut: each module's code is changed one small way at a time (an
operator, a constant, a condition, a call's argument) and its fast unit
tests are run against every change; a change no test notices (a
"survivor") is a behaviour the tests do not pin down, or an equivalent
change (the same behaviour). Not run by CI: a module takes minutes.

    .venv/bin/python benchmarks/mutation.py                    # every module
    .venv/bin/python benchmarks/mutation.py text_corpus shared_run # some
    .venv/bin/python benchmarks/mutation.py --list
    .venv/bin/python benchmarks/mutation.py --recheck token_shards_writer

Each module runs in a scratch copy of the checkout (--work-dir) laid out as
mutmut expects (the code under src/, the programs' packages at its top,
as the programs import them), one test process at a time, under `nice`
(the machine is shared). The results go to benchmarks/docs/mutation.json:
per module the date, the commit, the mutants, the killed, and each
survivor with its diff. Survivors judged equivalent are listed, with the
reason, under the module's "equivalent" key (kept across runs), and the
score counts the others: killed / (mutants - equivalent). What each
survivor means is in benchmarks/docs/mutation.md.
"""

import argparse
import datetime
import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "docs" / "mutation.json"
UNITS = "tests/applications/units"
PROGRAMS = "tests/applications/programs"

# Module -> (the files mutated, under src/; the tests run against them).
MODULES = {
    "text_corpus": (
        ["src/keras_gmlp/utils/text_corpus.py"],
        ["tests/test_text_corpus.py"],
    ),
    "token_shards": (
        [f"src/_token_shards/{name}.py" for name in ("corpus", "shard_set", "stream")],
        [f"{PROGRAMS}/test_token_shards.py", f"{UNITS}/test_input_edges.py"],
    ),
    # The writer's tests tokenize through tf.data (seconds a mutant).
    "token_shards_writer": (
        [f"src/_token_shards/{name}.py" for name in ("flags", "writer")],
        [
            f"{PROGRAMS}/test_token_shards.py",
            f"{PROGRAMS}/test_tokenize_corpus_resume.py",
            f"{UNITS}/test_flag_edges.py",
        ],
    ),
    # _text_input and _shared in parts: each whole is over a thousand
    # mutants (hours on the shared cores), and each part's tests are the
    # few that reach it.
    "text_input_files": (
        [f"src/_text_input/{name}.py" for name in ("text_files", "vocabulary")],
        [
            f"{UNITS}/test_text_files.py",
            f"{UNITS}/test_input_edges.py",
            f"{UNITS}/test_text_stream.py",
            f"{PROGRAMS}/test_tokenize_corpus_resume.py",
            # Its refusals only: its other tests train.
            f"{PROGRAMS}/test_text_streaming.py::test_bad_corpora_are_refused"
            "_in_one_line_before_training",
            f"{PROGRAMS}/test_text_streaming.py::test_a_bad_vocabulary_file_is_refused",
            # labelled_file_documents' test (the text classifier's files).
            f"{PROGRAMS}/test_finetune_text_classifier.py::test_text_files_are"
            "_labelled_by_their_folder",
        ],
    ),
    "text_input_stream": (
        [f"src/_text_input/{name}.py" for name in ("stream", "prefetch", "windows")],
        [
            f"{UNITS}/test_text_stream.py",
            f"{UNITS}/test_prefetch.py",
            f"{UNITS}/test_input_edges.py",
            # Its streams' tests (tf.data, no training).
            *(
                f"{PROGRAMS}/test_text_streaming.py::test_{name}"
                for name in (
                    "windows_join_documents_with_sep_across_boundaries",
                    "a_restored_stream_gives_the_same_batches_and_masks",
                    "feed_gives_each_iteration_the_batches_from_where_the_stream_stood",
                )
            ),
        ],
    ),
    "text_input_corpus": (
        [
            f"src/_text_input/{name}.py"
            for name in ("corpus", "sources", "datasets", "flags", "errors")
        ],
        [
            f"{UNITS}/test_input_edges.py",
            f"{UNITS}/test_text_stream.py",
            f"{UNITS}/test_flag_edges.py",
            f"{PROGRAMS}/test_token_shards.py",
            f"{UNITS}/test_text_corpus_input.py",
        ],
    ),
    "shared_flags": (
        [
            f"src/_shared/{name}.py"
            for name in (
                "flag_values",
                "flag_parser",
                "flags",
                "variants",
                "commands",
                "tfds_names",
            )
        ],
        [
            f"{UNITS}/test_flag_edges.py",
            f"{UNITS}/test_flag_frictions.py",
            f"{UNITS}/test_flag_precedence.py",
            f"{UNITS}/test_dataset_refusals.py",
            f"{UNITS}/test_flag_helpers.py",
        ],
    ),
    "shared_run": (
        [
            f"src/_shared/{name}.py"
            for name in (
                "files",
                "run_state",
                "report",
                "logs",
                "interrupt",
                "progress",
                "lora_backup",
            )
        ],
        [
            f"{UNITS}/test_atomic_writes.py",
            f"{UNITS}/test_progress.py",
            f"{UNITS}/test_lora_edges.py",
            f"{UNITS}/test_flag_frictions.py",
            f"{UNITS}/test_dataset_refusals.py",
            f"{UNITS}/test_checkpoint_split.py",
            f"{UNITS}/test_run_helpers.py",
        ],
    ),
    "shared_callbacks": (
        ["src/_shared/callbacks.py"],
        [
            f"{UNITS}/test_callbacks.py",
            f"{UNITS}/test_checkpoint_split.py",
            f"{UNITS}/test_atomic_writes.py",
        ],
    ),
    "shared_input": (
        [
            f"src/_shared/{name}.py"
            for name in ("batches", "distribute", "serving", "tensorflow_input")
        ],
        [
            f"{UNITS}/test_task_inputs.py",
            f"{UNITS}/test_tensorflow_input.py",
            f"{UNITS}/test_schedules.py",
            f"{UNITS}/test_flag_precedence.py",
            f"{UNITS}/test_input_helpers.py",
        ],
    ),
    # The decoder's thread choice, with the tests aimed at it: the
    # generation tests that also reach it build and decode models (a minute
    # a mutant).
    "decoding_threads": (
        ["src/keras_gmlp/models/gmlp/decoding/torch_threads.py"],
        [
            "tests/models/gmlp/test_torch_thread_choice.py",
            "tests/models/gmlp/test_torch_decoding_edges.py",
            "tests/models/gmlp/test_torch_decoding.py::test_thread_choice_follows"
            "_the_faster_count_as_the_load_changes",
        ],
    ),
}
# Lines left unmutated in the scratch copy (mutmut's "# pragma: no
# mutate"): their mutants would harm the machine, not only fail a test.
NOT_MUTATED = {
    # Keeping the parents that exist, not those missing, makes "/" the
    # directory a start created, which a refused start then removes
    # (shutil.rmtree, errors ignored; the tests run as root here).
    "src/_shared/flags.py": [
        "missing = [p for p in (path, *path.parents) if not p.exists()]",
    ],
}
# The test that runs whole programs in a subprocess from this checkout's
# applications/ (minutes), left out: the units cover the modules. By its
# whole name: "without_tensorflow" alone also left out test_tensorflow_input's
# test of a missing TensorFlow.
DESELECTED = ["-k", "not test_the_programs_train_on_shards_without_tensorflow"]
STATUS = {
    0: "survived",
    1: "killed",
    3: "killed",
    33: "no tests",
    5: "no tests",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help=f"of {sorted(MODULES)}")
    parser.add_argument("--list", action="store_true", help="list the modules")
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="run nothing: recount the scores of mutation.json after survivors "
        "were added to a module's 'equivalent' list",
    )
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="run only the survivors of mutation.json again, against this "
        "checkout's tests (in the scratch copy of the module's last run, "
        "still in --work-dir), after tests were added to kill them",
    )
    parser.add_argument(
        "--work-dir",
        type=pathlib.Path,
        default=pathlib.Path("/tmp/keras-gmlp-mutation"),
        help="where the scratch copies go (replaced)",
    )
    parser.add_argument("--backend", default="torch", help="KERAS_BACKEND of the tests")
    parser.add_argument(
        "--isolation",
        choices=["forkserver", "fork"],
        default="forkserver",
        help="mutmut's process_isolation: 'forkserver' forks each mutant's test "
        "process from a server that has collected the tests but run none, so "
        "TensorFlow's thread pools (tf.data) are not inherited mid-use and a "
        "timeout is a real hang; 'fork' (mutmut's default) is faster",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {sorted(MODULES)}")
    return args


def scratch_copy(folder, mutated, tests, isolation):
    """The checkout as mutmut's layout: src/ holds keras_gmlp and the
    programs' packages; applications/ (which the program tests run) is a
    link to it; a pyproject.toml configures mutmut and pytest."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "src").mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "keras_gmlp", folder / "src" / "keras_gmlp", ignore=ignore)
    for entry in (ROOT / "applications").iterdir():
        if entry.is_dir():
            shutil.copytree(entry, folder / "src" / entry.name, ignore=ignore)
        elif entry.suffix == ".py":
            shutil.copy2(entry, folder / "src" / entry.name)
    shutil.copytree(ROOT / "tests", folder / "tests", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", folder / "benchmarks", ignore=ignore)
    (folder / "mutants").mkdir()
    (folder / "mutants" / "applications").symlink_to("src")
    write_config(folder, mutated, tests, isolation)
    for name, lines in NOT_MUTATED.items():
        keep_unmutated(folder / name, lines)


def keep_unmutated(path, lines):
    """Marks each of `lines` in `path` "# pragma: no mutate"; a line no
    longer there is an error, so that a rewrite cannot drop the guard."""
    text = path.read_text(encoding="utf-8")
    for line in lines:
        if text.count(line) != 1:
            raise SystemExit(f"{path}: NOT_MUTATED's line is not there once: {line}")
        text = text.replace(line, f"{line}  # pragma: no mutate")
    path.write_text(text, encoding="utf-8")


def write_config(folder, mutated, tests, isolation):
    """The scratch copy's pyproject.toml: mutmut's and pytest's settings."""
    (folder / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {json.dumps(mutated)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests + DESELECTED)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:warnings"]\n'
        'also_copy = ["benchmarks"]\n'
        "use_git_change_detection = false\n"
        f'process_isolation = "{isolation}"\n\n'
        "[tool.pytest.ini_options]\n"
        'pythonpath = [".", "src", "benchmarks"]\n'
        'tmp_path_retention_policy = "failed"\n'
        f"markers = {json.dumps(pytest_markers())}\n"
    )


def pytest_markers():
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["pytest"]["ini_options"]["markers"]


def mutmut(folder, backend, *args, check=True):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(KERAS_BACKEND=backend, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3")
    command = ["nice", "-n", "15", sys.executable, "-m", "mutmut", *args]
    return subprocess.run(
        command, cwd=folder, env=env, check=check, capture_output=True, text=True
    )


def outcomes(folder):
    """{mutant: status} from mutmut's records of the mutated files."""
    found = {}
    for meta in sorted((folder / "mutants" / "src").rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in codes.items():
            found[name] = STATUS.get(code, "not checked" if code is None else str(code))
    return found


def commit():
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def measure(name, args, kept):
    mutated, tests = MODULES[name]
    folder = args.work_dir / name
    measured = commit()  # the copy's: the checkout may move on during the run
    scratch_copy(folder, mutated, tests, args.isolation)
    print(f"{name}: mutating {mutated}, testing with {tests}", flush=True)
    run_mutmut(name, folder, args)
    return {
        "measured": datetime.date.today().isoformat(),
        "commit": measured,
        "command": f".venv/bin/python benchmarks/mutation.py {name}",
        "isolation": args.isolation,
        "mutated": mutated,
        "tests": tests,
        **tally(folder, args, kept.get("equivalent", {})),
    }


def recheck(name, args, result):
    """Runs the survivors of `result` again against this checkout's tests
    and test selection, in the scratch copy of the module's last run, and
    counts again."""
    folder = args.work_dir / name
    if not (folder / "mutants").is_dir():
        raise SystemExit(f"{name}: no scratch copy in {folder}: run it whole")
    ignore = shutil.ignore_patterns("__pycache__")
    for tests in (folder / "tests", folder / "mutants" / "tests"):
        shutil.rmtree(tests, ignore_errors=True)
        shutil.copytree(ROOT / "tests", tests, ignore=ignore)
    # The module's test selection as this checkout names it (a test file
    # added for the survivors).
    mutated, tests = MODULES[name]
    for copy in (folder, folder / "mutants"):
        write_config(copy, mutated, tests, args.isolation)
    survivors = sorted(result["survivors"])
    print(f"{name}: {len(survivors)} survivors again, with the tests of {commit()}")
    if survivors:
        run_mutmut(name, folder, args, *survivors)
    counted = tally(folder, args, result.get("equivalent", {}), result)
    result["rechecked"] = {
        "measured": datetime.date.today().isoformat(),
        "commit": commit(),
        "killed": sorted(set(survivors) - set(counted["survivors"])),
    }
    result.update(counted)


def run_mutmut(name, folder, args, *mutants):
    command = ("run", "--max-children", "1", *mutants)
    run = mutmut(folder, args.backend, *command, check=False)
    if run.returncode and "Failed to run clean test" in run.stdout:
        # After collecting the stats of new tests in its own process (a
        # --recheck), mutmut's clean run of the tests in the fork server can
        # fail where the same run started afresh passes (TensorFlow after a
        # fork, as in "Caveats" of mutation.md): start it once more.
        run = mutmut(folder, args.backend, *command, check=False)
    if run.returncode:
        print(run.stdout[-3000:], run.stderr[-3000:], sep="\n")
        raise SystemExit(f"{name}: mutmut failed ({run.returncode})")


def tally(folder, args, kept_equivalent, measured=None):
    """The counts, the score and the survivors' diffs of the mutants in
    `folder`; `kept_equivalent` (mutant: reason) of the mutants that still
    survive are not counted. After a recheck, the mutants not run again
    have the outcome of the `measured` run's result."""
    found = outcomes(folder)
    if measured is not None:
        # mutmut may forget the results of the mutants a run with names
        # did not run (it did after a recheck's new test selection).
        earlier = set(measured["survivors"]) | set(measured.get("equivalent", {}))
        for mutant, status in found.items():
            if status == "not checked":
                found[mutant] = "survived" if mutant in earlier else "killed"
    equivalent = {
        k: v
        for k, v in kept_equivalent.items()
        if found.get(k, "killed") not in ("killed", "timeout")
    }
    survivors = {
        mutant: mutmut(folder, args.backend, "show", mutant).stdout.strip()
        for mutant, status in found.items()
        if status not in ("killed", "timeout") and mutant not in equivalent
    }
    # A mutant that makes the tests run past mutmut's limit is caught.
    killed = sum(status in ("killed", "timeout") for status in found.values())
    counted = len(found) - len(equivalent)
    return {
        "mutants": len(found),
        "killed": killed,
        "equivalent": equivalent,
        "score": round(killed / counted, 4) if counted else None,
        "statuses": {s: list(found.values()).count(s) for s in set(found.values())},
        "survivors": survivors,
    }


def rescore(result):
    """Drops the survivors now listed as equivalent and counts the score
    again."""
    equivalent = result.get("equivalent", {})
    for mutant in equivalent:
        result["survivors"].pop(mutant, None)
    counted = result["mutants"] - len(equivalent)
    result["score"] = round(result["killed"] / counted, 4) if counted else None


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        for name, (mutated, tests) in MODULES.items():
            print(f"{name}: {mutated} <- {tests}")
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.rescore:
        for result in results.values():
            rescore(result)
        RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        return
    for name in args.modules or list(MODULES):
        if args.recheck:
            recheck(name, args, results[name])
        else:
            results[name] = measure(name, args, results.get(name, {}))
        RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        result = results[name]
        print(
            f"{name}: {result['killed']} of {result['mutants']} killed, "
            f"{len(result['equivalent'])} equivalent: score {result['score']}; "
            f"{len(result['survivors'])} survivors in {RESULTS}",
            flush=True,
        )


if __name__ == "__main__":
    main()
