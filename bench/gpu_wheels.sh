#!/usr/bin/env bash
# Wheels for a GPU machine that has torch but not our stack: the exact versions this checkout's .venv runs
# (diffusers, transformers, peft, accelerate, pydantic and what they need, and open-clip-torch for the offline
# CLIP tokenizer's vocabulary), for CPython 3.12 on x86-64 Linux, into .whl/ (git-ignored); bench/gpu_check.sh
# installs them there. Left out: torch and its own needs, and the common packages the lent H200 machines' image
# already holds at versions our stack accepts (tokenizers 0.23.2, hf-xet, typer, requests, ...), which keeps
# the working tree plus wheels under the 64 MiB a call carries. ALL=1 takes those too.
#
#   bash bench/gpu_wheels.sh [python-version]      # default 3.12
set -euo pipefail
cd "$(dirname "$0")/.."
PYV="${1:-3.12}"
PY=.venv/bin/python
[ -x "$PY" ] || { echo "run 'bash scripts/setup.sh --dev' first: the versions come from .venv" >&2; exit 1; }
PINS=$("$PY" - <<'PY'
import importlib.metadata as md
import os
import re

from packaging.requirements import Requirement

ROOTS = ["diffusers", "transformers", "peft", "accelerate", "pydantic", "safetensors", "tqdm"]
SKIP = {"torch", "numpy", "pillow", "sympy", "networkx", "jinja2", "markupsafe", "mpmath", "setuptools", "triton"}
ON_DEVICE = {"tokenizers", "hf-xet", "typer", "rich", "pygments", "markdown-it-py", "mdurl", "shellingham", "click",
             "psutil", "pyyaml", "regex", "charset-normalizer", "requests", "urllib3", "idna", "certifi", "filelock",
             "fsspec", "packaging", "typing-extensions", "zipp", "anyio", "h11"}
if not os.environ.get("ALL"):
    SKIP |= ON_DEVICE
seen, stack = {}, list(ROOTS)
while stack:
    name = re.sub(r"[-_.]+", "-", stack.pop()).lower()
    if name in seen or name in SKIP:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    seen[name] = dist.version
    for r in dist.requires or []:
        req = Requirement(r)
        if not req.marker or req.marker.evaluate({"extra": ""}):
            stack.append(req.name)
# the offline CLIP tokenizer's vocabulary ships in open-clip-torch; like scripts/setup.sh, none of its needs
seen["open-clip-torch"] = md.version("open-clip-torch")
print(" ".join(f"{k}=={v}" for k, v in sorted(seen.items())))
PY
)
rm -rf .whl && mkdir .whl
PLATS=()
for p in manylinux_2_39 manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 \
         manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do PLATS+=(--platform "${p}_x86_64"); done
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp "${PLATS[@]}" \
    --platform any -d .whl $PINS
echo "$(ls .whl | wc -l) wheels, $(du -sh .whl | cut -f1) in .whl/"
