#!/usr/bin/env bash
# Rehearses the GPU run on this CPU, so that no device minute is spent on an
# import error: a virtual environment with the GPU host's versions (Python
# 3.12, torch 2.11, jax 0.11.2, timm, transformers; no Keras, keras-hub or
# TensorFlow) in $VENV, the wheels of wheels.sh installed as device.sh
# installs them there, and the check at --quick sizes (torch.compile left
# out: minutes on a CPU). Arguments go to the program.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${VENV:-/tmp/accelerator-rehearsal}
# python3.12 on the path, or pyenv's 3.12 (whose shim on the path runs only
# where 3.12 is a selected pyenv version).
python312=${PYTHON312:-}
if [ -z "$python312" ]; then
  for candidate in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
    if "$candidate" -c "import sys; assert sys.version_info[:2] == (3, 12)" 2> /dev/null; then
      python312=$candidate
      break
    fi
  done
fi
[ -n "$python312" ] || { echo "rehearse.sh: no Python 3.12 (set PYTHON312)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  "$python312" -m venv "$venv"
  # What the GPU host has (the device tool's KINDS.md), at its versions where
  # the check depends on them.
  "$venv/bin/python" -m pip install -q torch==2.11.0 torchvision==0.26.0 jax==0.11.2 \
    jaxlib==0.11.2 timm transformers safetensors huggingface_hub numpy h5py absl-py rich \
    ml-dtypes packaging regex requests tqdm pyyaml protobuf sentencepiece tokenizers
fi
if "$venv/bin/python" -c "import tensorflow" 2> /dev/null; then
  echo "rehearse.sh: $venv has TensorFlow, which the GPU host has not" >&2
  exit 1
fi
bash benchmarks/_accelerator/wheels.sh
rm -rf "$venv/site"
PYTHON=$venv/bin/python SITE=$venv/site OUT=${OUT:-outputs/accelerator-rehearsal} \
  bash benchmarks/_accelerator/device.sh --quick "$@"
