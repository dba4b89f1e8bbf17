"""Big bases on small cards (``model.base_quant``, ``model.block_swap``): the settings, their errors, the memory
plan's parts and notes, the Fit's reasons and the kohya rows."""

TEXTS: dict[str, tuple[str, str]] = {
    # the settings
    "field.base_quant": ("Base weights stored as", "기반 가중치 저장 형식"),
    "field.base_quant.info": (
        "the frozen transformer's Linear weights in 8 bits (int8), 4 bits (nf4) or fp8: a 12B base in 12–16 GB. The "
        "LoRA trains in full precision on top and its file works on the normal base; the frozen weights are rounded, "
        "so the numbers change a little, and each step is slower",
        "고정된 트랜스포머의 선형 층 가중치를 8비트(int8), 4비트(nf4), fp8로 저장해 12B 모델도 12–16GB에 올립니다. "
        "LoRA는 그 위에서 원래 정밀도로 학습하고, 파일은 일반 기반 모델에서 그대로 쓰입니다. 고정 가중치가 반올림되어 "
        "수치가 조금 바뀌고 스텝은 느려집니다"),
    "field.base_quant.choice.none": ("as loaded (no quantization)", "불러온 그대로(양자화 안 함)"),
    "field.base_quant.choice.int8": ("int8 (bitsandbytes LLM.int8)", "int8 (bitsandbytes LLM.int8)"),
    "field.base_quant.choice.nf4": ("nf4 (bitsandbytes 4-bit)", "nf4 (bitsandbytes 4비트)"),
    "field.base_quant.choice.fp8": ("fp8 (e4m3, a scale per row)", "fp8 (e4m3, 행마다 스케일)"),
    "field.block_swap": ("Transformer blocks kept in CPU memory", "CPU 메모리에 두는 트랜스포머 블록 수"),
    "field.block_swap.info": (
        "this many of the transformer's last blocks wait in CPU memory and visit the GPU for their forward and "
        "backward: less GPU memory, the same numbers, slower steps (kohya's blocks_to_swap). 0 = off",
        "트랜스포머의 마지막 블록 중 이만큼을 CPU 메모리에 두고 순전파와 역전파 때만 GPU로 옮깁니다. GPU 메모리는 "
        "줄고 수치는 같으며 스텝은 느려집니다(kohya의 blocks_to_swap). 0 = 끔"),
    # errors
    "error.lowmem.no_blocks": (
        "model.block_swap = {n}, but {family}'s denoiser has no blocks this app can move between the CPU and the "
        "device: set model.block_swap = 0 (model.base_quant and gradient checkpointing lower the memory too)",
        "model.block_swap = {n} 설정이지만 {family} 모델의 디노이저에는 CPU와 장치 사이로 옮길 수 있는 블록이 없습니다. "
        "model.block_swap = 0으로 두세요(model.base_quant와 그라디언트 체크포인팅으로도 메모리를 줄일 수 있습니다)"),
    "error.lowmem.too_many_blocks": (
        "model.block_swap = {n}, but {family}'s denoiser has {blocks} blocks: set model.block_swap to at most "
        "{blocks}",
        "model.block_swap = {n} 설정이지만 {family} 모델의 디노이저 블록은 {blocks}개뿐입니다. model.block_swap을 "
        "{blocks} 이하로 두세요"),
    "error.lowmem.no_fp8": (
        "model.base_quant = \"fp8\" needs torch's float8 types, which torch {torch} lacks: update torch, or set "
        "model.base_quant = \"int8\" or \"none\"",
        "model.base_quant = \"fp8\" 설정에는 torch의 float8 형식이 필요한데 torch {torch}에는 없습니다. torch를 "
        "업데이트하거나 model.base_quant = \"int8\" 또는 \"none\"으로 두세요"),
    "error.lowmem.no_bnb": (
        "model.base_quant = \"{mode}\" needs bitsandbytes, which could not be loaded ({reason}): pip install "
        "bitsandbytes, or set model.base_quant = \"fp8\" or \"none\"",
        "model.base_quant = \"{mode}\" 설정에는 bitsandbytes가 필요한데 불러오지 못했습니다({reason}). pip install "
        "bitsandbytes로 설치하거나 model.base_quant = \"fp8\" 또는 \"none\"으로 두세요"),
    "error.lowmem.bnb_device": (
        "model.base_quant = \"{mode}\": bitsandbytes could not quantize and run a layer on this {device} device "
        "({reason}): set model.base_quant = \"fp8\" or \"none\", or train on a device it supports (CUDA)",
        "model.base_quant = \"{mode}\": bitsandbytes가 이 {device} 장치에서 층을 양자화해 돌리지 못했습니다({reason}). "
        "model.base_quant = \"fp8\" 또는 \"none\"으로 두거나 지원하는 장치(CUDA)에서 학습하세요"),
    "error.lowmem.fp8_device": (
        "model.base_quant = \"fp8\": this {device} device cannot store or upcast float8 weights ({reason}): set "
        "model.base_quant = \"none\" (or \"int8\" where bitsandbytes runs)",
        "model.base_quant = \"fp8\": 이 {device} 장치에서는 float8 가중치를 저장하거나 올려 변환하지 못합니다({reason}). "
        "model.base_quant = \"none\"으로 두세요(bitsandbytes가 도는 곳이라면 \"int8\"도 됩니다)"),
    # the memory plan
    "memory.part.unet_other_weights": ("transformer, not Linear (frozen)",
                                       "트랜스포머, 선형 층 외(고정)"),
    "memory.part.unet_linear_int8": ("Linear weights, int8 + scales (frozen)",
                                     "트랜스포머 선형 층 가중치, int8 + 행 스케일(고정)"),
    "memory.part.unet_linear_nf4": ("Linear weights, nf4 + scales (frozen)",
                                    "트랜스포머 선형 층 가중치, nf4 + 블록 스케일(고정)"),
    "memory.part.unet_linear_fp8": ("Linear weights, fp8 + scales (frozen)",
                                    "트랜스포머 선형 층 가중치, fp8 + 행 스케일(고정)"),
    "memory.part.quant_dequant": ("one layer dequantized at a time", "한 번에 한 층씩 역양자화"),
    "memory.part.block_swap_parked": ("blocks waiting in CPU memory", "CPU 메모리에서 기다리는 블록"),
    "memory.part.block_swap_in_flight": ("one of them on the device at a time", "그중 한 번에 하나만 장치에"),
    "memory.lowmem.quant.int8": (
        "int8 base weights: the frozen weights are rounded to 8 bits (the numbers change a little); about {pct}% "
        "slower a step (provisional: assumed, not yet measured on a GPU)",
        "int8 기반 가중치: 고정 가중치를 8비트로 반올림합니다(수치가 조금 바뀜). 스텝은 약 {pct}% 느려집니다"
        "(잠정치: 가정한 값이며 아직 GPU에서 재지 않음)"),
    "memory.lowmem.quant.nf4": (
        "nf4 base weights: the frozen weights are rounded to 4 bits (the numbers change more than with int8); "
        "about {pct}% slower a step (provisional: assumed, not yet measured on a GPU)",
        "nf4 기반 가중치: 고정 가중치를 4비트로 반올림합니다(int8보다 수치가 더 바뀜). 스텝은 약 {pct}% 느려집니다"
        "(잠정치: 가정한 값이며 아직 GPU에서 재지 않음)"),
    "memory.lowmem.quant.fp8": (
        "fp8 base weights: the frozen weights are rounded to fp8 e4m3 with a scale per row (the numbers change a "
        "little); about {pct}% slower a step (provisional: assumed, not yet measured on a GPU)",
        "fp8 기반 가중치: 고정 가중치를 행마다 스케일을 둔 fp8 e4m3로 반올림합니다(수치가 조금 바뀜). 스텝은 약 "
        "{pct}% 느려집니다(잠정치: 가정한 값이며 아직 GPU에서 재지 않음)"),
    "memory.lowmem.swap": (
        "block swap: {n} of {blocks} blocks wait in pinned CPU memory ({pinned}); the same numbers, about {pct}% "
        "slower a step (provisional: {moved} copied to the GPU a step, forward and backward, at an assumed "
        "{bandwidth} GB/s, {copy_ms} ms not overlapped with about {compute_ms} ms of compute at an assumed {tflops} "
        "TFLOPS)",
        "블록 스왑: 블록 {blocks}개 중 {n}개를 고정(pinned) CPU 메모리에 둡니다({pinned}). 수치는 같고 스텝은 약 "
        "{pct}% 느려집니다(잠정치: 스텝마다 순전파와 역전파에 {moved}를 GPU로 복사, 가정한 {bandwidth} GB/s로 {copy_ms} "
        "ms, 가정한 {tflops} TFLOPS로 약 {compute_ms} ms인 계산과 겹치지 않음)"),
    "memory.warn.swap_shared": (
        "model.block_swap saves nothing here: this device's memory is the system's, where the blocks would wait",
        "model.block_swap은 여기서 아무것도 아끼지 못합니다. 이 장치의 메모리가 곧 블록이 기다릴 시스템 메모리입니다"),
    # fit to memory
    "memory_fit.why.model.base_quant": (
        "frozen transformer weights stored as {mode}: this changes the numerics (the frozen weights are rounded; "
        "the LoRA still trains in full precision), about {pct}% slower a step (provisional)",
        "고정된 트랜스포머 가중치를 {mode} 형식으로 저장: 수치가 바뀜(고정 가중치를 반올림하고 LoRA는 그대로 원래 "
        "정밀도로 학습), 스텝은 약 {pct}% 느려짐(잠정치)"),
    "memory_fit.why.model.block_swap": (
        "{n} of {blocks} transformer blocks wait in CPU memory, one visits the GPU at a time: the same numbers, only "
        "slower, about {pct}% a step (provisional)",
        "트랜스포머 블록 {blocks}개 중 {n}개를 CPU 메모리에 두고 한 번에 하나씩 GPU로 옮김: 수치는 같고 느려지기만 함, "
        "스텝마다 약 {pct}%(잠정치)"),
    # kohya
    "kohya.row.fp8_base": (
        "model.base_quant = \"fp8\": the frozen model's Linear weights in fp8 (ours keeps a scale per row; "
        "sd-scripts casts them as they are); LoRA weights and optimizer state stay fp32",
        "model.base_quant = \"fp8\": 고정 모델의 선형 층 가중치를 fp8로(우리는 행마다 스케일을 둠, sd-scripts는 그대로 "
        "변환). LoRA 가중치와 옵티마이저 상태는 fp32 유지"),
    "kohya.row.blocks_to_swap": (
        "the last N transformer blocks wait in CPU memory and visit the GPU for their forward and backward, as "
        "sd-scripts' does",
        "sd-scripts처럼 트랜스포머의 마지막 N개 블록을 CPU 메모리에 두고 순전파와 역전파 때 GPU로 옮김"),
    "kohya.changed.base_quant": (
        "sd-scripts has fp8_base only: ours stores the frozen weights as {mode}, which it cannot; fp8 is the "
        "nearest it has",
        "sd-scripts에는 fp8_base만 있음: 우리는 고정 가중치를 {mode} 형식으로 저장하지만 sd-scripts는 못 함. 가장 가까운 "
        "fp8로 둠"),
    "kohya.export.block_swap_script": (
        "sd-scripts' {script} swaps no blocks (its SD3.5 and FLUX scripts do): it keeps the whole model on the GPU",
        "sd-scripts의 {script} 스크립트는 블록을 옮기지 않음(SD3.5와 FLUX 스크립트는 옮김): 모델 전체를 GPU에 둠"),
}  # fmt: skip
