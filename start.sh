#!/usr/bin/env bash
# Set everything up (first run only) and start LoRA Doctor on the built-in demo at http://127.0.0.1:7860
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/python app.py "$@"
