"""The words of a Flux.1 kohya import or export (:mod:`trainer.kohya.flux`, :mod:`trainer.kohya.flux_export`): what
becomes of flux_train_network.py's settings here, and what the export writes for sd-scripts and why."""

from __future__ import annotations

TEXTS: dict[str, tuple[str, str]] = {
    "kohya.table.flux": ("Flux.1 only: read when flux1_checkbox is on (LoRA_type Flux1) or network_module is "
                         "networks.lora_flux",
                         "Flux.1 전용: flux1_checkbox가 켜져 있거나(LoRA_type Flux1) network_module이 "
                         "networks.lora_flux일 때 읽음"),
    # the mapping table's notes
    "kohya.flux.row.family": ("sd-scripts: flux_train_network.py (networks.lora_flux)",
                              "sd-scripts: flux_train_network.py(networks.lora_flux)"),
    "kohya.flux.row.model_type": ("flux is FLUX.1; chroma (Chroma, another model) is refused",
                                  "flux는 FLUX.1. chroma(Chroma, 다른 모델)는 가져오지 않음"),
    "kohya.flux.row.files": ("ours reads CLIP-L, T5-XXL and the VAE (sd-scripts' ae) from model.base, a diffusers "
                             "folder",
                             "우리는 CLIP-L, T5-XXL, VAE(sd-scripts의 ae)를 model.base의 diffusers 폴더에서 읽음"),
    "kohya.flux.row.t5_tokens": ("ours reads {tokens} T5-XXL tokens ({schnell} for FLUX.1-schnell), sd-scripts' "
                                 "defaults",
                                 "우리는 sd-scripts 기본값처럼 T5-XXL 토큰 {tokens}개(FLUX.1-schnell은 {schnell}개)를 "
                                 "읽음"),
    "kohya.flux.row.mask": ("ours feeds T5-XXL's padding tokens unmasked, as diffusers' FluxPipeline and sd-scripts' "
                            "default do",
                            "우리는 diffusers의 FluxPipeline과 sd-scripts 기본값처럼 T5-XXL의 패딩 토큰을 마스크 없이 "
                            "넣음"),
    "kohya.flux.row.guidance": ("the guidance a guidance-distilled base (FLUX.1-dev) trains at; sd-scripts' default "
                                "is 3.5, ours 1.0",
                                "가이던스 증류된 기반 모델(FLUX.1-dev)을 학습할 때의 가이던스. sd-scripts 기본값은 3.5, "
                                "우리 기본값은 1.0"),
    "kohya.flux.row.timesteps": ("ours draws the noise levels logit-normal (sd-scripts' sigmoid, sigmoid_scale 1) "
                                 "shifted by the base's training shift (none for FLUX.1-dev) and weighs every sample "
                                 "the same; sd-scripts' default is sigma with uniform weighting",
                                 "우리는 노이즈 수준을 로짓 정규분포(sd-scripts의 sigmoid, sigmoid_scale 1)로 뽑아 기반 "
                                 "모델의 학습 shift(FLUX.1-dev는 없음)만큼 옮기고 모든 샘플에 같은 가중치를 줌. "
                                 "sd-scripts 기본값은 sigma(uniform 가중)"),
    "kohya.flux.row.shift": ("ours shifts by the base's training shift: none (1.0) for FLUX.1-dev, whose scheduler "
                             "shifts only when sampling; sd-scripts' default is 3.0",
                             "우리는 기반 모델의 학습 shift만큼 옮김: FLUX.1-dev는 스케줄러가 샘플링할 때만 옮기므로 "
                             "없음(1.0). sd-scripts 기본값은 3.0"),
    "kohya.flux.row.prediction": ("ours compares the transformer's output with the velocity (noise − latents) as it "
                                  "is: sd-scripts' raw; its default is sigma_scaled",
                                  "우리는 트랜스포머 출력을 그대로 속도(노이즈 − latent)와 비교함: sd-scripts의 raw. "
                                  "sd-scripts 기본값은 sigma_scaled"),
    "kohya.flux.row.fp8_unet": ("the transformer alone in fp8: model.base_quant = \"fp8\" (ours stores only the "
                                "transformer's frozen weights in fp8 in any case)",
                                "트랜스포머만 fp8로: model.base_quant = \"fp8\"(우리는 어느 경우든 트랜스포머의 고정 "
                                "가중치만 fp8로 저장)"),
    "kohya.flux.row.cpu_offload": ("ours saves that memory with model.block_swap and gradient checkpointing",
                                   "우리는 model.block_swap과 그라디언트 체크포인팅으로 그 메모리를 아낌"),
    "kohya.flux.row.split_mode": ("deprecated in sd-scripts (blocks_to_swap replaced it); with it kohya_ss trains "
                                  "the single blocks only. Ours trains every block: model.block_swap saves memory",
                                  "sd-scripts에서 더 이상 쓰지 않음(blocks_to_swap으로 바뀜). 켜면 kohya_ss는 단일 "
                                  "블록만 학습함. 우리는 모든 블록을 학습하고, 메모리는 model.block_swap으로 아낌"),
    "kohya.flux.row.old_swap": ("deprecated in kohya_ss: blocks_to_swap replaced it",
                                "kohya_ss에서 더 이상 쓰지 않음: blocks_to_swap으로 바뀜"),
    "kohya.flux.row.mem_eff_save": ("how sd-scripts writes its files: does not change what is trained",
                                    "sd-scripts가 파일을 쓰는 방식: 학습 내용은 바뀌지 않음"),
    "kohya.flux.row.oft_only": ("read only for Flux1 OFT, which is not trained here",
                                "Flux1 OFT에서만 읽음. 여기서는 OFT를 학습하지 않음"),
    "kohya.flux.row.train_t5": ("ours never trains T5-XXL (nor does networks.lora_flux unless train_t5xxl is on); "
                                "lora.train_text_encoder trains CLIP-L",
                                "우리는 T5-XXL을 학습하지 않음(networks.lora_flux도 train_t5xxl을 켜지 않으면 학습하지 "
                                "않음). lora.train_text_encoder는 CLIP-L을 학습"),
    "kohya.flux.row.type_dims": ("a layer type whose dim is 0 is left out; ours reads attn_ff (the modulation dims 0, "
                                 "split_qkv on) or attn (the double blocks' feed-forward dims 0 too)",
                                 "dim이 0인 층 종류는 빠짐. 우리는 attn_ff(변조 dim이 0, split_qkv 켬) 또는 attn(이중 "
                                 "블록의 피드포워드 dim도 0)으로 읽음"),
    "kohya.flux.row.split_qkv": ("q, k and v (and a single block's MLP input) each a LoRA of its own, as ours trains "
                                 "them; without it they share one",
                                 "q, k, v(단일 블록은 MLP 입력까지)를 우리처럼 각각 따로 LoRA로 학습. 끄면 하나를 "
                                 "함께 씀"),
    "kohya.flux.row.train_blocks": ("ours trains the double and the single blocks (kohya_ss passes train_blocks only "
                                    "with split_mode, as single)",
                                    "우리는 이중 블록과 단일 블록을 모두 학습(kohya_ss는 split_mode일 때만 train_blocks를 "
                                    "single로 넘김)"),
    "kohya.flux.row.block_indices": ("ours trains every block", "우리는 모든 블록을 학습"),
    "kohya.flux.row.in_dims": ("ours trains no LoRA on the input layers (img_in, time_in, vector_in, guidance_in, "
                               "txt_in)",
                               "우리는 입력 층(img_in, time_in, vector_in, guidance_in, txt_in)에 LoRA를 달지 않음"),
    # an import
    "kohya.flux.only": ("read only for Flux.1 (flux1_checkbox, LoRA_type Flux1 or networks.lora_flux)",
                        "Flux.1일 때만 읽음(flux1_checkbox, LoRA_type Flux1 또는 networks.lora_flux)"),
    "kohya.flux.and_sd3": ("read only for SD3.5 and Flux.1", "SD3.5와 Flux.1일 때만 읽음"),
    "kohya.flux.v_parameterization": ("Flux.1 trains by flow matching; flux_train_network.py does not use it either",
                                      "Flux.1은 flow matching으로 학습. flux_train_network.py도 쓰지 않음"),
    "kohya.flux.clip_skip": ("not used for Flux.1: ours reads CLIP-L's pooled output, as sd-scripts does",
                             "Flux.1에는 쓰지 않음: 우리는 sd-scripts처럼 CLIP-L의 풀링된 출력을 읽음"),
    "kohya.flux.max_token_length": ("not used for Flux.1 (sd-scripts says so too); T5-XXL's tokens are "
                                    "t5xxl_max_token_length",
                                    "Flux.1에는 쓰지 않음(sd-scripts도 그렇게 알림). T5-XXL 토큰 수는 "
                                    "t5xxl_max_token_length"),
    "kohya.flux.sdxl": ("flux1_checkbox decides the model: ours trains Flux.1",
                        "모델은 flux1_checkbox로 정함: 우리는 Flux.1을 학습"),
    "kohya.flux.fp8_by_unet": ("fp8_base_unet decides: the transformer in fp8 (model.base_quant = \"fp8\")",
                               "fp8_base_unet 설정이 정함: 트랜스포머를 fp8로(model.base_quant = \"fp8\")"),
    "kohya.flux.changed.base": ("ours loads Flux.1 from a diffusers folder (transformer, VAE, CLIP-L, T5-XXL and their "
                                "tokenizers), not from the single file {file}: model.base is FLUX.1-dev's repository "
                                "({hub}). If {file} is another Flux.1 model (schnell, a fine-tune, a de-distilled "
                                "base), give model.base its diffusers folder",
                                "우리는 Flux.1을 단일 파일({file})이 아니라 diffusers 폴더(트랜스포머, VAE, CLIP-L, "
                                "T5-XXL, 토크나이저)에서 불러옴: model.base는 FLUX.1-dev 저장소({hub}). 그 파일({file})이 "
                                "다른 Flux.1 모델(schnell, 파인튜닝, 탈증류 모델)이면 model.base에 그 모델의 diffusers "
                                "폴더를 지정하세요"),
    "kohya.flux.changed.timesteps": ("{sampling}: ours draws the noise levels logit-normal (mean 0, std 1), shifted by "
                                     "the base's training shift {shift:g}, and weighs every sample the same "
                                     "(sd-scripts' shift with sigmoid_scale 1 and discrete_flow_shift {shift:g})",
                                     "{sampling} 방식: 우리는 노이즈 수준을 로짓 정규분포(평균 0, 표준편차 1)로 뽑아 기반 "
                                     "모델의 학습 shift {shift:g}만큼 옮기고 모든 샘플에 같은 가중치를 줌(sd-scripts로는 "
                                     "shift 방식, sigmoid_scale 1, discrete_flow_shift {shift:g})"),
    "kohya.flux.changed.sigmoid_scale": ("ours draws with scale 1 (a standard normal)",
                                         "우리는 배율 1(표준 정규분포)로 뽑음"),
    "kohya.flux.changed.shift": ("ours trains with the base's training shift: {shift:g}",
                                 "우리는 기반 모델의 학습 shift로 학습: {shift:g}"),
    "kohya.flux.changed.prediction": ("ours compares the transformer's output with the velocity (noise − latents) as "
                                      "it is: sd-scripts' raw",
                                      "우리는 트랜스포머 출력을 그대로 속도(노이즈 − latent)와 비교함: sd-scripts의 raw"),
    "kohya.flux.changed.t5_tokens": ("ours reads {tokens} T5-XXL tokens (FLUX.1-dev's; {schnell} for schnell)",
                                     "우리는 T5-XXL 토큰 {tokens}개를 읽음(FLUX.1-dev 기준, schnell은 {schnell}개)"),
    "kohya.flux.changed.targets": ("{targets} is the closest: ours trains attention (attn: both streams' q, k, v and "
                                   "output in the double blocks, q, k and v in the single blocks) or every linear "
                                   "layer of the blocks but the modulation (attn_ff), at lora.rank, in every block, "
                                   "q, k and v each a LoRA of its own (sd-scripts' split_qkv)",
                                   "가장 가까운 것: {targets}. 우리는 어텐션(attn: 이중 블록에서는 두 흐름의 q, k, v와 "
                                   "출력, 단일 블록에서는 q, k, v) 또는 변조를 뺀 블록의 모든 선형 층(attn_ff)을 모든 "
                                   "블록에서 lora.rank로 학습하고, q, k, v를 각각 따로 LoRA로 둠(sd-scripts의 "
                                   "split_qkv)"),
    "kohya.flux.unused.scale": ("read only with timestep_sampling sigmoid, shift or flux_shift",
                                "timestep_sampling이 sigmoid, shift, flux_shift일 때만 읽음"),
    "kohya.flux.unused.shift": ("read only with timestep_sampling shift or sigma",
                                "timestep_sampling이 shift 또는 sigma일 때만 읽음"),
    "kohya.flux.unused.weighting": ("read only with timestep_sampling sigma (and as loss weights with "
                                    "model_prediction_type sigma_scaled); ours weighs every sample the same",
                                    "timestep_sampling이 sigma일 때만 읽음(model_prediction_type이 sigma_scaled이면 손실 "
                                    "가중치로도). 우리는 모든 샘플에 같은 가중치를 줌"),
    "kohya.flux.unused.logit": ("read only with timestep_sampling sigma and weighting_scheme logit_normal",
                                "timestep_sampling이 sigma이고 weighting_scheme이 logit_normal일 때만 읽음"),
    # an export
    "kohya.flux.export.model": ("sd-scripts reads Flux.1 from single .safetensors files, not from {base}: fill in "
                                "the transformer's file (such as Black Forest Labs' flux1-dev.safetensors)",
                                "sd-scripts는 Flux.1을 단일 .safetensors 파일에서만 읽음({base}에서는 못 읽음): "
                                "트랜스포머 파일(예: Black Forest Labs의 flux1-dev.safetensors) 경로를 채우세요"),
    "kohya.flux.export.files": ("sd-scripts takes CLIP-L, T5-XXL and the VAE (ae) as one .safetensors file each: "
                                "fill in its path",
                                "sd-scripts는 CLIP-L, T5-XXL, VAE(ae)를 각각 .safetensors 파일 하나로 받음: 경로를 "
                                "채우세요"),
    "kohya.flux.export.guidance": ("the guidance ours trains FLUX.1-dev at (sd-scripts' default is 3.5)",
                                   "우리가 FLUX.1-dev를 학습하는 가이던스(sd-scripts 기본값은 3.5)"),
    "kohya.flux.export.timesteps": ("ours draws the noise levels logit-normal (a sigmoid of a standard normal) and "
                                    "shifts them, which is sd-scripts' shift sampling at sigmoid_scale 1; its "
                                    "default is sigma",
                                    "우리는 노이즈 수준을 로짓 정규분포(표준 정규분포의 sigmoid)로 뽑아 옮김: "
                                    "sd-scripts의 shift 방식(sigmoid_scale 1)과 같음. sd-scripts 기본값은 sigma"),
    "kohya.flux.export.shift": ("the base's training shift, which ours trains with (1.0 for FLUX.1-dev: its scheduler "
                                "shifts only when sampling); sd-scripts' default is 3.0",
                                "우리가 학습에 쓰는 기반 모델의 학습 shift(FLUX.1-dev는 스케줄러가 샘플링할 때만 "
                                "옮기므로 1.0). sd-scripts 기본값은 3.0"),
    "kohya.flux.export.prediction": ("the transformer's output compared with the velocity as it is, as ours does "
                                     "(sd-scripts' default sigma_scaled is not)",
                                     "우리처럼 트랜스포머 출력을 그대로 속도와 비교함(sd-scripts 기본값 sigma_scaled는 "
                                     "다름)"),
    "kohya.flux.export.t5": ("not written: sd-scripts' defaults are ours ({tokens} T5-XXL tokens, {schnell} for "
                             "schnell; no attention mask)",
                             "쓰지 않음: sd-scripts 기본값이 우리와 같음(T5-XXL 토큰 {tokens}개, schnell은 "
                             "{schnell}개, 어텐션 마스크 없음)"),
    "kohya.flux.export.no_cache": ("not cached: sd-scripts cannot cache the text encoders' outputs while CLIP-L "
                                   "trains or while captions are shuffled or dropped, so it runs CLIP-L and T5-XXL "
                                   "every step",
                                   "캐시하지 않음: CLIP-L을 학습하거나 캡션을 섞거나 빼면 sd-scripts는 출력을 캐시할 수 "
                                   "없어 CLIP-L과 T5-XXL을 스텝마다 돌림"),
    "kohya.flux.export.targets": ("networks.lora_flux trains every linear layer of the blocks but the layer types "
                                  "whose dim is 0 (the modulation); split_qkv gives q, k and v a LoRA each, as ours",
                                  "networks.lora_flux는 dim이 0인 층 종류(변조)만 빼고 블록의 모든 선형 층을 학습. "
                                  "split_qkv로 우리처럼 q, k, v에 LoRA를 하나씩 닮"),
    "kohya.flux.export.attn": ("sd-scripts holds a single block's q, k, v and MLP input in one layer (linear1) and "
                               "both outputs in another (linear2), so it cannot train only their attention: the "
                               "single blocks are trained whole, the double blocks' feed-forward left out",
                               "sd-scripts는 단일 블록의 q, k, v와 MLP 입력을 한 층(linear1)에, 두 출력을 다른 층"
                               "(linear2)에 두어 어텐션만 학습할 수 없음: 단일 블록은 통째로 학습하고 이중 블록의 "
                               "피드포워드는 뺌"),
    "kohya.flux.export.cross_kv": ("sd-scripts cannot train only the text's keys and values; the closest it can, as "
                                   "for attn, is written",
                                   "sd-scripts는 텍스트의 키와 값만 학습할 수 없음. attn과 같이 가장 가까운 설정을 씀"),
    "kohya.flux.export.samples": ("ours draws FLUX.1-dev at its embedded guidance {guidance:g} without classifier-free "
                                  "guidance: sd-scripts' --g and --l 1. For a de-distilled base ours draws with true "
                                  "guidance at sample.guidance: set --l to it",
                                  "우리는 FLUX.1-dev를 내장 가이던스 {guidance:g}로, 분류기 없는 가이던스 없이 그림: "
                                  "sd-scripts의 --g와 --l 1. 탈증류 기반 모델이면 우리는 sample.guidance로 실제 "
                                  "가이던스를 쓰므로 --l을 그 값으로 하세요"),
}
