"""The words of the kohya mapping table (:data:`trainer.kohya.mapping.ROWS`): what becomes of each kohya_ss /
sd-scripts setting, as the import report and the table in docs/kohya.md say it."""

from __future__ import annotations

TEXTS: dict[str, tuple[str, str]] = {
    "kohya.table.note": ("note", "설명"),
    "kohya.table.not_carried": ("— (not carried over)", "— (옮기지 않음)"),
    "kohya.row.sdxl": ("sd-scripts: sdxl_train_network.py instead of train_network.py",
                       "sd-scripts: train_network.py 대신 sdxl_train_network.py"),
    "kohya.row.v2": ("SD 2.x is refused: ours trains SD 1.5, SDXL and SD 3.5",
                     "SD 2.x는 거절: 우리는 SD 1.5, SDXL, SD 3.5만 학습"),
    "kohya.row.train_data_dir": ("or the common parent of the dataset config's subsets",
                                 "또는 데이터셋 설정 subset들의 공통 상위 폴더"),
    "kohya.row.reg_data_dir": ("or the parent of the is_reg subsets; sd-scripts balances them to the "
                               "dataset's count, ours uses their folders' repeats",
                               "또는 is_reg subset들의 상위 폴더. sd-scripts는 데이터셋 수에 맞춰 늘리고 우리는 폴더의 반복 수를 씀"),
    "kohya.row.masked_loss": ("sd-scripts reads each mask from conditioning_data_dir (the same names) or, with "
                              "alpha_mask, from the alpha channel; ours from name-masklabel.png beside each picture "
                              "or its transparency",
                              "sd-scripts는 마스크를 conditioning_data_dir(같은 이름)이나 alpha_mask일 때 알파 채널에서 "
                              "읽고, 우리는 각 그림 옆의 이름-masklabel.png나 투명도에서 읽음"),
    "kohya.row.max_resolution": ('"512,512" in the GUI; one number (or [w, h]) in a dataset config',
                                 'GUI에서는 "512,512", 데이터셋 설정에서는 숫자 하나(또는 [w, h])'),
    "kohya.row.conv_dim": ('read only for LoRA_type "Kohya LoCon" / "LyCORIS/LoCon", as kohya_ss does',
                           'kohya_ss처럼 LoRA_type이 "Kohya LoCon" / "LyCORIS/LoCon"일 때만 읽음'),
    "kohya.row.LoRA_type": ("plain LoRA (Standard, networks.lora) and LoCon; LoHa, LoKr, iA3, DyLoRA, "
                            "GLoRA... become LoRA",
                            "기본 LoRA(Standard, networks.lora)와 LoCon. LoHa, LoKr, iA3, DyLoRA, GLoRA 등은 "
                            "LoRA로 바꿈"),
    "kohya.row.optimizer": ("AdamW, AdamW8bit, Prodigy; Paged… and DAdapt… go to their closest",
                            "AdamW, AdamW8bit, Prodigy. Paged…와 DAdapt…는 가장 가까운 것으로"),
    "kohya.row.optimizer_args": ("weight_decay, betas and eps are read; other arguments are listed",
                                 "weight_decay, betas, eps를 읽고 나머지는 목록으로 알림"),
    "kohya.row.unet_lr": ("wins over learning_rate when set, as in sd-scripts",
                          "설정되면 sd-scripts처럼 learning_rate보다 우선"),
    "kohya.row.text_encoder_lr": ("0 / empty = the same as the UNet's", "0 / 빈칸 = UNet과 같음"),
    "kohya.row.lr_scheduler_num_cycles": ("empty in the GUI means one cycle per epoch, as kohya_ss passes it",
                                          "GUI에서 빈칸이면 kohya_ss처럼 에폭마다 한 주기"),
    "kohya.row.lr_warmup": ("a percentage of kohya's total steps, turned into steps",
                            "kohya 전체 스텝의 백분율을 스텝 수로 바꿈"),
    "kohya.row.lr_warmup_steps": ("a value below 1 is a share of the total steps, as in sd-scripts",
                                  "1보다 작으면 sd-scripts처럼 전체 스텝의 비율"),
    "kohya.row.epoch": ("the GUI turns it into max_train_steps with its own formula (see the step count)",
                        "GUI는 자체 공식으로 max_train_steps로 바꿈(스텝 수 비교 참고)"),
    "kohya.row.max_train_epochs": ("wins over epoch and max_train_steps when set, as in sd-scripts",
                                   "설정되면 sd-scripts처럼 epoch와 max_train_steps보다 우선"),
    "kohya.row.max_train_steps": ("0 in the GUI = computed from epochs; sd-scripts' default is 1600",
                                  "GUI의 0 = 에폭으로 계산. sd-scripts 기본값은 1600"),
    "kohya.row.mixed_precision": ("fp16 → bf16 where the device has bf16 (no loss scaler, no overflow); no → "
                                  "fp32",
                                  "장치가 bf16을 지원하면 fp16 → bf16(손실 스케일러·오버플로 없음). no → fp32"),
    "kohya.row.noise_offset": ("the GUI's only when noise_offset_type is Original",
                               "GUI 값은 noise_offset_type이 Original일 때만"),
    "kohya.row.save_every_n_epochs": ("ours saves by steps: epochs × kohya's steps per epoch",
                                      "우리는 스텝 단위로 저장: 에폭 × kohya의 에폭당 스텝"),
    "kohya.row.sample_prompts": ("one prompt a line; --n → sample.negative_prompt, --s → sample.steps, --l → "
                                 "sample.guidance, --d → sample.seed when all lines agree; --w/--h are "
                                 "listed",
                                 "한 줄에 프롬프트 하나. 모든 줄이 같으면 --n → sample.negative_prompt, --s → sample.steps, "
                                 "--l → sample.guidance, --d → sample.seed. --w/--h는 목록으로 알림"),
    "kohya.row.sample_every_n_epochs": ("epochs × kohya's steps per epoch", "에폭 × kohya의 에폭당 스텝"),
    "kohya.row.clip_skip": ("ours reads the text encoder's last layer (clip skip 1)",
                            "우리는 텍스트 인코더의 마지막 층을 씀(clip skip 1)"),
    "kohya.row.save_precision": ("ours writes LoRA files in fp16, which every UI loads",
                                 "우리는 모든 UI가 읽는 fp16으로 LoRA 파일을 씀"),
    "kohya.row.save_model_as": ("ours writes .safetensors (kohya layout) plus a diffusers twin",
                                "우리는 .safetensors(kohya 형식)와 diffusers 형식 파일을 씀"),
    "kohya.row.bucket_no_upscale": ("ours upscales small pictures into their bucket and warns above 2×",
                                    "우리는 작은 그림을 버킷에 맞게 키우고 2배를 넘으면 경고"),
    "kohya.row.color_aug": ("colour jitter is not offered; it also stops latent caching",
                            "색 흔들기는 없음. 잠재 캐시도 막음"),
    "kohya.row.random_crop": ("ours centre-crops into the bucket", "우리는 버킷에 맞춰 가운데를 자름"),
    "kohya.row.max_token_length": ("ours reads 75 tokens (CLIP's window)", "우리는 75토큰(CLIP 창)을 읽음"),
    "kohya.row.caption_dropout_every_n_epochs": ("ours: dataset.caption_dropout drops a share of captions "
                                                 "every epoch",
                                                 "우리는 dataset.caption_dropout으로 매 에폭 일부 캡션을 뺌"),
    "kohya.row.stop_text_encoder_training": ("ours trains the text-encoder LoRA for the whole run or not at "
                                             "all",
                                             "우리는 텍스트 인코더 LoRA를 끝까지 학습하거나 전혀 안 함"),
    "kohya.row.speed": ("speed/memory switch; ours picks PyTorch's fused attention itself",
                        "속도·메모리 스위치. 우리는 PyTorch의 결합 어텐션을 스스로 고름"),
    "kohya.row.fixed_fp32": ("ours keeps LoRA weights and optimizer state in fp32 (our numerics rule); only "
                             "the frozen model is fp16/bf16",
                             "우리는 LoRA 가중치와 옵티마이저 상태를 fp32로 둠(수치 규칙). 고정된 모델만 fp16/bf16"),
    "kohya.row.noise": ("ours has plain noise offset (train.noise_offset) only",
                        "우리는 기본 noise offset(train.noise_offset)만 있음"),
    "kohya.row.loss": ("ours trains the plain MSE loss, with min-SNR weighting (train.min_snr_gamma)",
                       "우리는 기본 MSE 손실과 min-SNR 가중치(train.min_snr_gamma)로 학습"),
    "kohya.row.weighted_captions": ("ours reads a caption as plain text", "우리는 캡션을 일반 글로 읽음"),
    "kohya.row.scale_weight_norms": ("ours clips the gradient norm (optim.max_grad_norm) and watches weight "
                                     "growth",
                                     "우리는 기울기 노름을 자르고(optim.max_grad_norm) 가중치 증가를 감시"),
    "kohya.row.resume": ("ours keeps resume state in every checkpoint; `train --resume RUN_DIR` continues",
                         "우리는 모든 체크포인트에 재개 상태를 둠. `train --resume RUN_DIR`로 이어 감"),
    "kohya.row.keep": ("ours: save.keep_last keeps the last N checkpoints",
                       "우리는 save.keep_last로 마지막 N개 체크포인트를 남김"),
    "kohya.row.blocks": ("per-block ranks/lrs are not offered; ours: lora.conv_blocks picks the blocks that "
                         "get convolution LoRA",
                         "블록별 rank/lr은 없음. 우리는 lora.conv_blocks로 합성곱 LoRA를 달 블록을 고름"),
    "kohya.row.lora_dropout": ("ours has lora.dropout (on the LoRA's input)",
                               "우리는 lora.dropout(LoRA 입력에)만 있음"),
    "kohya.row.sample_sampler": ("ours samples with the base model's own scheduler",
                                 "우리는 기반 모델 자체의 스케줄러로 샘플을 그림"),
    "kohya.row.te_cache": ("encodes every caption and sample prompt once before training and moves the text encoders "
                           "off the GPU; it needs frozen text encoders and tags neither shuffled nor dropped (caption "
                           "dropout is fine). Without it ours still caches the embeddings then, encoders on the GPU",
                           "학습 전에 캡션과 샘플 프롬프트를 한 번씩 인코딩하고 텍스트 인코더를 GPU에서 내림. 텍스트 "
                           "인코더가 고정이고 태그를 섞거나 빼지 않아야 함(캡션 드롭아웃은 괜찮음). 끄면 그때도 "
                           "임베딩은 캐시하되 인코더는 GPU에 둠"),
    "kohya.row.te_cache_other": ("this config's text-encoder cache is {key}; the GUI does not pass this SDXL box "
                                 "for it",
                                 "이 설정의 텍스트 인코더 캐시는 {key} 상자이며, GUI는 이 SDXL 상자를 넘기지 않음"),
    "kohya.row.vae": ("ours runs the VAE in fp32 where the base's VAE needs it (SDXL), automatically",
                      "우리는 VAE가 필요로 하면(SDXL) 자동으로 fp32로 돌림"),
    "kohya.row.vae_batch_size": ("ours encodes the latent cache one picture at a time",
                                 "우리는 잠재 캐시를 한 장씩 인코딩"),
    "kohya.row.lr_scheduler_power": ("polynomial schedules become linear (power 1)",
                                     "polynomial 스케줄은 linear(power 1)로 바꿈"),
    "kohya.row.lr_scheduler_args": ("scheduler arguments are not offered", "스케줄러 인수는 없음"),
    "kohya.row.lr_scheduler_type": ("custom scheduler classes are not offered", "사용자 스케줄러 클래스는 없음"),
    "kohya.row.additional_parameters": ("free-form sd-scripts arguments are not read; they are listed",
                                        "자유 형식 sd-scripts 인수는 읽지 않고 목록으로 알림"),
    "kohya.row.dataset_config": ("read as the dataset when the file exists (also --dataset-config)",
                                 "파일이 있으면 데이터셋으로 읽음(--dataset-config도 같음)"),
    "kohya.row.log": ("logging, uploading or bookkeeping: does not change what is trained",
                      "기록·업로드·관리용: 학습 내용은 바뀌지 않음"),
    "kohya.row.launch": ("how accelerate is launched; ours: `torchrun --nproc_per_node N python -m trainer "
                         "train`",
                         "accelerate 실행 방식. 우리는 `torchrun --nproc_per_node N python -m trainer train`"),
}
