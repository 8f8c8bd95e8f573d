#!/usr/bin/env bash
# Builds .whl/ here for the GPU host (Python 3.12, x86-64; PyTorch, JAX,
# timm, transformers, safetensors, huggingface_hub, numpy, h5py, absl-py,
# rich, ml-dtypes, regex, requests, pyyaml, tqdm, protobuf, sentencepiece and
# tokenizers are there): Keras and
# keras-hub at the versions this environment has, so the card runs what CI
# tests, the dependencies the host lacks, and this package's wheel.
# keras-hub comes without its dependencies: its tensorflow-text is imported
# only on TensorFlow. tensorboardX writes the programs' TensorBoard scalars
# where TensorFlow is not installed, as on the card. The device tool carries at most 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-.venv/bin/python}
version() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))"; }
rm -rf .whl.partial && mkdir .whl.partial
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl.partial \
  "keras==$(version keras)" "keras-hub==$(version keras-hub)" "namex==$(version namex)" \
  "optree==$(version optree)" "kagglehub==$(version kagglehub)" \
  "kagglesdk==$(version kagglesdk)" "tensorboardX==$(version tensorboardX)"
"$py" -m pip wheel -q --no-deps --no-build-isolation -w .whl.partial .
size_kib=$(du -sk .whl.partial | cut -f1)
if [ "$size_kib" -gt $((64 * 1024)) ]; then
  echo "wheels.sh: .whl would be ${size_kib} KiB, over the device tool's 64 MiB" >&2
  exit 1
fi
rm -rf .whl && mv .whl.partial .whl
ls -1 .whl && echo "${size_kib} KiB in .whl"
