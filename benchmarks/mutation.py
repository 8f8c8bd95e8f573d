"""Mutation testing of the library's and the programs' pure-Python modules
with mutmut: each module's code is changed one small way at a time (an
operator, a constant, a condition, a call's argument) and its fast unit
tests are run against every change; a change no test notices (a
"survivor") is a behaviour the tests do not pin down, or an equivalent
change (the same behaviour). Not run by CI: a module takes minutes.

    .venv/bin/python benchmarks/mutation.py                    # every module
    .venv/bin/python benchmarks/mutation.py text_corpus shared # some
    .venv/bin/python benchmarks/mutation.py --list

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
    "text_input": (
        ["src/_text_input/*.py"],
        [
            f"{UNITS}/test_text_stream.py",
            f"{UNITS}/test_input_edges.py",
            f"{PROGRAMS}/test_token_shards.py",
            f"{PROGRAMS}/test_tokenize_corpus_resume.py",
        ],
    ),
    "shared": (["src/_shared/*.py"], [UNITS]),
}
# The tests that run whole programs in a subprocess from this checkout's
# applications/ (minutes each), left out: the units cover the modules.
DESELECTED = ["-k", "not without_tensorflow"]
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
        "--work-dir",
        type=pathlib.Path,
        default=pathlib.Path("/tmp/keras-gmlp-mutation"),
        help="where the scratch copies go (replaced)",
    )
    parser.add_argument("--backend", default="torch", help="KERAS_BACKEND of the tests")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {sorted(MODULES)}")
    return args


def scratch_copy(folder, mutated, tests):
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
    (folder / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {json.dumps(mutated)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests + DESELECTED)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:warnings"]\n'
        'also_copy = ["benchmarks"]\n'
        "use_git_change_detection = false\n\n"
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
    scratch_copy(folder, mutated, tests)
    print(f"{name}: mutating {mutated}, testing with {tests}", flush=True)
    run = mutmut(folder, args.backend, "run", "--max-children", "1", check=False)
    if run.returncode:
        print(run.stdout[-3000:], run.stderr[-3000:], sep="\n")
        raise SystemExit(f"{name}: mutmut failed ({run.returncode})")
    found = outcomes(folder)
    equivalent = {
        k: v
        for k, v in kept.get("equivalent", {}).items()
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
        "measured": datetime.date.today().isoformat(),
        "commit": measured,
        "command": f".venv/bin/python benchmarks/mutation.py {name}",
        "mutated": mutated,
        "tests": tests,
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
