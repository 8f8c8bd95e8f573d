#!/usr/bin/env bash
# On the GPU host: installs the carried wheels (.whl, made here by
# wheels.sh) into /tmp/site and runs benchmarks/accelerator.py, writing to
# $OUT (the device tool's folder) or outputs/accelerator. Extra arguments go
# to the program. PYTHON names another interpreter (the rehearsal's).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
site=${SITE:-/tmp/site}
"$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$site" .whl/*.whl
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
exec "$python" benchmarks/accelerator.py --out "${OUT:-outputs/accelerator}" "$@"
