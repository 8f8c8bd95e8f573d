"""Runs programs as a host without TensorFlow would: TensorFlow,
tensorflow-text and tensorflow-datasets are not found by any import (as
`importlib.util.find_spec` sees an uninstalled package).

    python without_tensorflow.py '[["applications/x.py", "--flag"], ...]'

Runs each program's `__main__` in turn, in this process, and exits with the
first non-zero status.
"""

import importlib.machinery
import json
import pathlib
import runpy
import sys

HIDDEN = {"tensorflow", "tensorflow_text", "tensorflow_datasets", "tf_keras"}


class PathFinderWithoutTensorFlow(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return super().find_spec(name, path, target)


def main():
    sys.meta_path = [
        PathFinderWithoutTensorFlow if f is importlib.machinery.PathFinder else f
        for f in sys.meta_path
    ]
    for command in json.loads(sys.argv[1]):
        program = pathlib.Path(command[0])
        sys.path.insert(0, str(program.parent))
        sys.argv = command
        try:
            runpy.run_path(str(program), run_name="__main__")
        except SystemExit as exit:
            if exit.code:
                raise
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN)
    print(f"TensorFlow modules loaded: {loaded}")


if __name__ == "__main__":
    main()
