#!/usr/bin/env bash
# Sets up .venv inside the repo. Idempotent: a second run with unchanged requirements takes about a second.
#   scripts/setup.sh          what the app needs
#   scripts/setup.sh --dev    plus the test tools (pytest, ruff, mypy, playwright) and headless Chromium
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
[ "${1:-}" = "--dev" ] && dev=1

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python

stamp=".venv/.setup-$dev"
want=$(cat requirements.txt requirements-dev.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

pip() { "$VPY" -m pip --disable-pip-version-check "$@"; }
# torch first, pinned, where none is present: an unpinned torch (or a range it does not satisfy) would make pip
# download a multi-GB CUDA build on machines that only have the CPU wheel. On Linux with a GPU this same pin
# is the CUDA build from PyPI. Windows: see README for the CUDA build.
if ! "$VPY" -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing torch 2.13.0"
  pip install -q "torch==2.13.0"
fi
echo "setup: installing requirements"
pip install -q -r requirements.txt
# The CLIP tokenizer's BPE merges come from this wheel's data; its code (and torchvision) is never used.
pip install -q --no-deps "open-clip-torch==3.3.0"
if [ "$dev" = 1 ]; then
  pip install -q -r requirements-dev.txt
fi
echo "$want" > "$stamp"
