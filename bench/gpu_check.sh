#!/usr/bin/env bash
# The prepared check for a CUDA machine that has python3 with torch but not our stack. Every part has its own
# time limit and writes its log under $OUT:
#   1. versions and the GPU;
#   2. the README's demo on the GPU, as a GPU user's click runs it: scripts/demo_lora_check.py with one
#      training seed (training on CUDA, the measuring on the CPU) - time and likeness;
#   3. bench/bench_gpu.py: real-size SD1.5, 512 px, bf16, batch 1/4, checkpointing off/on, ours vs reference;
#   4. the guard and training tests on CUDA (fp16 loss scaling, bf16, NaN detection, rollback, resume, a real CUDA
#      out of memory), and SD3.5 on its tiny model (flow matching, T5 kept out of fp16, the exported files);
#   5. the memory plan against CUDA: real-size SD1.5 (and SDXL), bf16, 512 px (SDXL 1024), batch 1/2, gradient
#      checkpointing off/on: torch.cuda.max_memory_allocated above the step's start vs the plan's
#      activations + LoRA gradients (the coefficients were measured on a CPU, whose bf16 autocast differs), and the
#      model measures' forward pass at the same size (no gradients) against the training step's;
#   6. what the doctor's model measures cost on the GPU: bench/bench_measures.py, the demo run's first 400 steps
#      with them on against off;
#   7. model.base_quant and model.block_swap: bench/bench_lowmem.py, four of SD3.5 Large's blocks at full width,
#      1024 px, bf16, checkpointing: each storage's step time against bf16, block swap's copy bandwidth and the
#      bytes placed against the plan; its last line replaces the plan's provisional factors
#      (trainer/plan/memory_lowmem.py);
#   8. the mask maker on CUDA: CLIPSeg (tiny, the real class) masks the demo character's pictures through
#      `python -m trainer mask` with the model on the GPU; the masks' sizes and coverage are printed.
#
# Here, once:  bash bench/gpu_wheels.sh                  (our stack's wheels for CPython 3.12 into .whl/)
# There:       bash bench/gpu_check.sh [PART ...]        (with .whl carried; parts 1-8, default all)
# Parts 1+3 take at most ~5 minutes and parts 2+4 ~6, so a 10-minute call limit fits each pair: run "1 3"
# first (the benchmark's figures), then "2 4", then "5 6" (about 4 minutes each), then "7 8" (about 3).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
PY="${PY:-python3}"
if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "installing the carried wheels failed"; exit 1; }
    export PYTHONPATH=/tmp/site
fi
PARTS="${*:-1 2 3 4 5 6 7 8}"
want() { [[ " $PARTS " == *" $1 "* ]]; }
t0=$(date +%s)
part() { echo; echo "== $* ($(( $(date +%s) - t0 )) s)"; }
: >"$OUT/check.log"

if want 1; then
part "1. versions" | tee -a "$OUT/check.log"
{ nvidia-smi -L; "$PY" - <<'PY'
import accelerate, diffusers, peft, torch, transformers
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), diffusers {diffusers.__version__}, transformers "
      f"{transformers.__version__}, peft {peft.__version__}, accelerate {accelerate.__version__}")
print(torch.cuda.get_device_name(), "bf16:", torch.cuda.is_bf16_supported())
PY
} 2>&1 | tee -a "$OUT/check.log"
fi

if want 2; then
part "2. demo check, one training seed, on $(nproc) CPU threads for the measuring" | tee -a "$OUT/check.log"
timeout 150 "$PY" scripts/demo_lora_check.py --train-seeds 1 --skip-overfit --threads "$(nproc)" \
    --work /tmp/demo-check >"$OUT/demo_check.txt" 2>&1
echo "exit $?" >>"$OUT/demo_check.txt"
grep -E "default demo run|PASS|FAIL|^exit" "$OUT/demo_check.txt" | tee -a "$OUT/check.log"
fi

if want 3; then
part "3. bench_gpu.py" | tee -a "$OUT/check.log"
timeout 270 "$PY" bench/bench_gpu.py --work /tmp/bench-gpu 2>&1 | grep -v -E "gemm_4bit|torchvision|should be kept" \
    | tee "$OUT/bench_gpu.txt" | tee -a "$OUT/check.log"
fi

if want 4; then
part "4. guard and training tests on CUDA" | tee -a "$OUT/check.log"
timeout 240 "$PY" -m pytest -q -rfE -p no:cacheprovider tests/test_guard.py tests/test_training.py tests/test_sd3.py \
    tests/test_unfinished.py \
    >"$OUT/pytest.txt" 2>&1
echo "exit $?" >>"$OUT/pytest.txt"
tail -n 25 "$OUT/pytest.txt" | tee -a "$OUT/check.log"
fi
if want 5; then
part "5. memory plan vs CUDA max_memory_allocated" | tee -a "$OUT/check.log"
timeout 240 "$PY" - <<'PY' 2>&1 | grep -v -E "gemm_4bit|torchvision" | tee "$OUT/memory.txt" | tee -a "$OUT/check.log"
import sys
sys.path.insert(0, "."); sys.path.insert(0, "bench")
import torch
import memory_probe as mp
from bench_memory import estimate

dev = torch.device("cuda")
for family, res in (("sd15", 512), ("sdxl", 1024)):
    with dev:
        unet = mp.build_unet(family, torch.bfloat16)
    mp.attach(unet, family)
    for ckpt in (False, True):
        for batch in (1, 2):
            for p in unet.parameters():
                p.grad = None
            unet.train()
            unet.enable_gradient_checkpointing() if ckpt else unet.disable_gradient_checkpointing()
            side = res // 8
            x = torch.randn(batch, 4, side, side, device=dev, dtype=torch.bfloat16)
            h = torch.randn(batch, 77, unet.config.cross_attention_dim, device=dev)
            t = torch.randint(0, 1000, (batch,), device=dev)
            added = ({"text_embeds": torch.randn(batch, 1280, device=dev),
                      "time_ids": torch.tensor([[res, res, 0, 0, res, res]] * batch, device=dev).float()}
                     if family == "sdxl" else None)
            torch.cuda.synchronize()
            start = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pred = unet(x, t, h, added_cond_kwargs=added).sample
            torch.nn.functional.mse_loss(pred.float(), torch.randn_like(pred, dtype=torch.float32)).backward()
            torch.cuda.synchronize()
            measured = torch.cuda.max_memory_allocated() - start
            est = estimate(family, "bf16", res, batch, ckpt)
            print(f"{family} {res}px batch {batch} ckpt {ckpt!s:5}: estimate {est / 2**30:.2f} GiB, CUDA "
                  f"max_memory_allocated {measured / 2**30:.2f} GiB ({est / measured - 1:+.0%})", flush=True)
            # the model measures' forward pass beside it (trainer/train/probes.py: Denoiser.items), no gradients
            from trainer.sampling import BATCH_PIXELS
            items = max(batch, BATCH_PIXELS // (res * res))
            del pred
            unet.eval()
            torch.cuda.synchronize()
            start = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                unet(x[:items], t[:items], h[:items], added_cond_kwargs=added and
                     {k: v[:items] for k, v in added.items()}).sample
            torch.cuda.synchronize()
            probe = torch.cuda.max_memory_allocated() - start
            print(f"    the measures' pass ({items} picture(s), no gradients): {probe / 2**30:.2f} GiB, "
                  f"{probe / measured:.2f} of the training step's", flush=True)
    del unet
    torch.cuda.empty_cache()
PY
fi
if want 6; then
part "6. the doctor's model measures on the GPU: the demo run with them on against off (400 steps)" | tee -a "$OUT/check.log"
timeout 240 "$PY" bench/bench_measures.py --steps 400 2>&1 | grep -v -E "gemm_4bit|torchvision" \
    | tee "$OUT/measures.txt" | tee -a "$OUT/check.log"
fi
if want 7; then
part "7. quantized base weights and block swap on the GPU (SD3.5 Large's blocks, 1024 px)" | tee -a "$OUT/check.log"
timeout 300 "$PY" bench/bench_lowmem.py --blocks 4 --steps 3 2>&1 | grep -v -E "gemm_4bit|torchvision" \
    | tee "$OUT/lowmem.txt" | tee -a "$OUT/check.log"
fi
if want 8; then
part "8. the mask maker on CUDA (tiny CLIPSeg of the real class, the demo character's pictures)" | tee -a "$OUT/check.log"
masks="$(mktemp -d)"
timeout 120 "$PY" -m trainer tiny-masker clipseg "$masks/clipseg" > /dev/null 2>&1
timeout 60 "$PY" -c "from trainer.demo.datasets import write_character_dataset as w; w('$masks/data')" > /dev/null 2>&1
timeout 180 "$PY" -c "import torch; from trainer.caption.models import torch_device; print('device', torch_device())" \
    2>&1 | tee -a "$OUT/check.log"
timeout 180 "$PY" -m trainer mask "$masks/data" --model "$masks/clipseg" --prompt "a character, a hat" --json 2>&1 \
    | grep -v -E "gemm_4bit|torchvision" | tee "$OUT/masks.json" | grep -E '"written"|"seconds"' | tee -a "$OUT/check.log"
fi
part "done" | tee -a "$OUT/check.log"
