#!/usr/bin/env bash
# Set everything up (first run only), then lint, type-check, check the layer contracts and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh --dev
bash scripts/browser.sh || echo "test.sh: no headless Chromium; browser tests will be skipped"
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy  # trainer/, ui/ and words/, as pyproject.toml [tool.mypy] says
.venv/bin/lint-imports  # the layer contracts of pyproject.toml [tool.importlinter] (docs/design.md, "Layers")
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error DIFFUSERS_VERBOSITY=error
# two processes, one test file each at a time (tests/conftest.py gives each one thread); -n 0 runs in this one
exec .venv/bin/python -m pytest -q -n "${LORA_DOCTOR_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
