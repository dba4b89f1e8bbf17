"""The words of an SD3.5 kohya import or export (:mod:`trainer.kohya.sd3`, :mod:`trainer.kohya.sd3_export`): what
becomes of sd3_train_network.py's settings here, and what the export writes for sd-scripts and why."""

from __future__ import annotations

TEXTS: dict[str, tuple[str, str]] = {
    "kohya.table.sd3": ("SD3.5 only: read when sd3_checkbox is on or network_module is networks.lora_sd3",
                        "SD3.5 전용: sd3_checkbox가 켜져 있거나 network_module이 networks.lora_sd3일 때 읽음"),
    # the mapping table's notes
    "kohya.sd3.row.family": ("sd-scripts: sd3_train_network.py (networks.lora_sd3)",
                             "sd-scripts: sd3_train_network.py(networks.lora_sd3)"),
    "kohya.sd3.row.te_file": ("ours reads the text encoders from model.base (a diffusers folder, or a single file that "
                              "holds them); a base without T5-XXL trains without it, zeros in its place",
                              "우리는 텍스트 인코더를 model.base(diffusers 폴더 또는 인코더가 든 단일 파일)에서 읽음. "
                              "T5-XXL이 없는 기반 모델은 그 자리를 0으로 채우고 T5 없이 학습"),
    "kohya.sd3.row.flux_only": ("kohya_ss passes it to Flux.1 only; SD3 does not use it",
                                "kohya_ss는 Flux.1에만 넘기고 SD3에는 쓰지 않음"),
    "kohya.sd3.row.t5_device": ("sd-scripts does not use it yet; ours keeps T5-XXL on the training device",
                                "sd-scripts도 아직 쓰지 않음. 우리는 T5-XXL을 학습 장치에 둠"),
    "kohya.sd3.row.t5_dtype": ("sd-scripts does not use it yet; ours runs T5-XXL in the run's precision, or in fp32 "
                               "when that is fp16 (T5 overflows in fp16)",
                               "sd-scripts도 아직 쓰지 않음. 우리는 T5-XXL을 실행 정밀도로 돌리되, 그것이 fp16이면 "
                               "fp32로 돌림(T5는 fp16에서 넘침)"),
    "kohya.sd3.row.t5_tokens": ("ours reads {tokens} T5-XXL tokens, sd-scripts' default",
                                "우리는 sd-scripts 기본값처럼 T5-XXL 토큰 {tokens}개를 읽음"),
    "kohya.sd3.row.mask": ("ours feeds the padding tokens unmasked, as diffusers' SD3 pipeline and sd-scripts' "
                           "default do",
                           "우리는 diffusers의 SD3 파이프라인과 sd-scripts 기본값처럼 패딩 토큰을 마스크 없이 넣음"),
    "kohya.sd3.row.te_dropout": ("per-encoder dropout is not offered; ours drops whole captions "
                                 "(dataset.caption_dropout)",
                                 "인코더별 드롭아웃은 없음. 우리는 캡션 전체를 뺌(dataset.caption_dropout)"),
    "kohya.sd3.row.pos_embed": ("ours crops the transformer's position embedding to the picture's size, as diffusers "
                                "does",
                                "우리는 diffusers처럼 트랜스포머의 위치 임베딩을 그림 크기에 맞춰 잘라 씀"),
    "kohya.sd3.row.shift": ("ours shifts the noise levels by the base's own scheduler shift (3.0 for SD3.5); "
                            "sd-scripts' default is 1.0",
                            "우리는 기반 모델 스케줄러의 shift(SD3.5는 3.0)만큼 노이즈 수준을 옮김. "
                            "sd-scripts 기본값은 1.0"),
    "kohya.sd3.row.timesteps": ("ours draws timesteps logit-normal (mean 0, std 1) and weighs every sample the same; "
                                "sd-scripts' default is uniform",
                                "우리는 타임스텝을 로짓 정규분포(평균 0, 표준편차 1)로 뽑고 모든 샘플에 같은 가중치를 "
                                "줌. sd-scripts 기본값은 uniform"),
    "kohya.sd3.row.mode_scale": ("read only with weighting_scheme = mode, which ours does not offer",
                                 "weighting_scheme = mode일 때만 읽음. 우리에게는 없는 방식"),
    "kohya.sd3.row.cache_to_disk": ("ours keeps its cache of text embeddings in memory",
                                    "우리는 텍스트 임베딩 캐시를 메모리에 둠"),
    "kohya.sd3.row.train_t5": ("ours never trains T5-XXL (nor does sd3_train_network.py unless network_args has "
                               "train_t5xxl=True); lora.train_text_encoder trains CLIP-L and CLIP-G",
                               "우리는 T5-XXL을 학습하지 않음(sd3_train_network.py도 network_args에 train_t5xxl=True가 "
                               "없으면 학습하지 않음). lora.train_text_encoder는 CLIP-L과 CLIP-G를 학습"),
    "kohya.sd3.row.type_dims": ("a layer type whose dim is 0 is left out; ours reads attn (feed-forward and "
                                "modulation at 0) or attn_ff (modulation at 0)",
                                "dim이 0인 층 종류는 빠짐. 우리는 attn(피드포워드와 변조가 0) 또는 attn_ff(변조가 0)로 "
                                "읽음"),
    "kohya.sd3.row.fused_backward": ("memory switch for Adafactor; ours steps the optimizer after the whole backward "
                                     "pass",
                                     "Adafactor용 메모리 스위치. 우리는 역전파가 모두 끝난 뒤 옵티마이저를 갱신"),
    "kohya.sd3.row.mmap": ("how the files are read: does not change what is trained",
                           "파일 읽는 방식: 학습 내용은 바뀌지 않음"),
    "kohya.sd3.row.save_te": ("does not work in sd-scripts yet; ours saves the LoRA only",
                              "sd-scripts에서도 아직 동작하지 않음. 우리는 LoRA만 저장"),
    "kohya.sd3.row.te_batch": ("ours encodes one batch's captions at a time", "우리는 한 번에 배치 하나의 캡션을 인코딩"),
    # an import
    "kohya.sd3.only": ("read only for SD3 (sd3_checkbox or networks.lora_sd3)",
                       "SD3일 때만 읽음(sd3_checkbox 또는 networks.lora_sd3)"),
    "kohya.sd3.v_parameterization": ("SD3.5 trains by flow matching; sd3_train_network.py does not use it either",
                                     "SD3.5는 flow matching으로 학습. sd3_train_network.py도 쓰지 않음"),
    "kohya.sd3.clip_skip": ("not used for SD3.5; ours reads both CLIPs' penultimate layers, as sd-scripts does",
                            "SD3.5에는 쓰지 않음. 우리는 sd-scripts처럼 두 CLIP의 끝에서 두 번째 층을 읽음"),
    "kohya.sd3.sdxl": ("sd3_checkbox decides the model: ours trains SD3.5",
                       "모델은 sd3_checkbox로 정함: 우리는 SD3.5를 학습"),
    "kohya.sd3.changed.t5_tokens": ("ours reads {tokens} T5-XXL tokens", "우리는 T5-XXL 토큰 {tokens}개를 읽음"),
    "kohya.sd3.changed.weighting": ("{scheme} is not offered: ours draws SD3.5's timesteps logit-normal (mean 0, std 1) "
                                    "and weighs every sample the same",
                                    "{scheme} 방식은 없음: 우리는 SD3.5의 타임스텝을 로짓 정규분포(평균 0, 표준편차 1)로 "
                                    "뽑고 모든 샘플에 같은 가중치를 줌"),
    "kohya.sd3.changed.logit": ("ours draws with mean {mean:g} and std {std:g}",
                                "우리는 평균 {mean:g}, 표준편차 {std:g}로 뽑음"),
    "kohya.sd3.logit_unused": ("read only with weighting_scheme = logit_normal",
                               "weighting_scheme = logit_normal일 때만 읽음"),
    "kohya.sd3.changed.shift": ("ours trains with the base's own scheduler shift: {shift:g}",
                                "우리는 기반 모델 스케줄러의 shift를 그대로 씀: {shift:g}"),
    "kohya.sd3.changed.targets": ("ours trains attention (attn) or attention and feed-forward (attn_ff) of both "
                                  "streams at lora.rank, never the modulation (adaLN) layers; {targets} is the closest",
                                  "우리는 두 흐름의 어텐션(attn) 또는 어텐션과 피드포워드(attn_ff)를 lora.rank로 학습하고 "
                                  "변조(adaLN) 층은 학습하지 않음. 가장 가까운 것: {targets}"),
    # an export
    "kohya.sd3.export.timesteps": ("ours draws timesteps logit-normal with logit_mean and logit_std; sd-scripts' "
                                   "default is uniform",
                                   "우리는 logit_mean과 logit_std의 로짓 정규분포로 타임스텝을 뽑음. sd-scripts 기본값은 "
                                   "uniform"),
    "kohya.sd3.export.shift": ("the base's scheduler shift, which ours trains with (sd-scripts' default is 1.0)",
                               "우리가 학습에 쓰는 기반 모델 스케줄러의 shift(sd-scripts 기본값은 1.0)"),
    "kohya.sd3.export.t5_tokens": ("the T5-XXL tokens ours reads", "우리가 읽는 T5-XXL 토큰 수"),
    "kohya.sd3.export.cache": ("cached, as ours does: the text encoders are frozen and captions are neither shuffled "
                               "nor dropped",
                               "우리처럼 캐시함: 텍스트 인코더가 고정이고 캡션을 섞거나 빼지 않음"),
    "kohya.sd3.export.no_cache": ("not cached: sd-scripts cannot cache the text encoders' outputs while they train or "
                                  "while captions are shuffled or dropped, so it runs all three every step",
                                  "캐시하지 않음: 텍스트 인코더를 학습하거나 캡션을 섞거나 빼면 sd-scripts는 출력을 "
                                  "캐시할 수 없어 인코더 셋을 스텝마다 돌림"),
    "kohya.sd3.export.targets": ("networks.lora_sd3 trains every linear layer of the blocks (the modulation layers "
                                 "too) but the layer types whose dim is 0",
                                 "dim이 0인 층 종류만 빠짐: 그 밖에는 networks.lora_sd3 모듈이 블록의 모든 선형 층(변조 "
                                 "층 포함)을 학습"),
    "kohya.sd3.export.cross_kv": ("sd-scripts fuses q, k and v into one layer, so it cannot train only the text's "
                                  "keys and values; attention (our attn) is the closest",
                                  "sd-scripts는 q, k, v를 한 층으로 합쳐 두어 텍스트의 키와 값만 학습할 수 없음. 가장 "
                                  "가까운 것은 어텐션(우리 attn)"),
    "kohya.sd3.export.te_unknown": ("sd-scripts reads CLIP-L, CLIP-G and T5-XXL from this file when it holds them; for "
                                    "a model-only file (such as Stability's sd3.5_medium.safetensors) set clip_l, clip_g "
                                    "and t5xxl",
                                    "이 파일에 CLIP-L, CLIP-G, T5-XXL이 들어 있으면 sd-scripts가 거기서 읽음. 모델만 든 "
                                    "파일(Stability의 sd3.5_medium.safetensors 등)이면 clip_l, clip_g, t5xxl을 "
                                    "지정하세요"),
    "kohya.sd3.export.te_in_file": ("sd-scripts reads CLIP-L, CLIP-G and T5-XXL from this file",
                                    "sd-scripts가 이 파일에서 CLIP-L, CLIP-G, T5-XXL을 읽음"),
    "kohya.sd3.export.te_missing": ("{file} does not hold {name} and sd-scripts needs all three text encoders: fill in "
                                    "the path of its .safetensors file",
                                    "{file} 파일에 {name} 인코더가 없음. sd-scripts에는 텍스트 인코더 셋이 모두 필요: 그 "
                                    ".safetensors 파일 경로를 채우세요"),
    "kohya.sd3.export.single_file": ("sd-scripts reads SD3.5 only from single .safetensors files, not from {base}: "
                                     "fill in the model file (MMDiT and VAE, such as sd3.5_medium.safetensors)",
                                     "sd-scripts는 SD3.5를 단일 .safetensors 파일에서만 읽음({base}에서는 못 읽음): 모델 "
                                     "파일(MMDiT와 VAE, 예: sd3.5_medium.safetensors) 경로를 채우세요"),
    "kohya.sd3.export.te_files": ("sd-scripts takes each text encoder as one .safetensors file: fill in its path",
                                  "sd-scripts는 텍스트 인코더마다 .safetensors 파일 하나를 받음: 경로를 채우세요"),
}
