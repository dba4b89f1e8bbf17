"""The UI's words in English and Korean. ``t(key, lang, **values)``; a missing key is a KeyError (tests check
that every key the code uses exists in both languages)."""

from __future__ import annotations

import words
from trainer.run.samples import PROMPT_KINDS, prompt_kind

LANGS = ("en", "ko")

TEXTS: dict[str, tuple[str, str]] = {
    # app and wizard
    "title": ("# 🩺 LoRA Doctor\nFrom a folder of pictures to a working LoRA, watching the numbers as it trains.",
              "# 🩺 LoRA Doctor\n그림 폴더에서 쓸 만한 LoRA까지, 학습 중 숫자를 지켜보며."),
    "step_dataset": ("Dataset", "데이터셋"),
    "step_plan": ("Steps", "스텝"),
    "step_preset": ("Preset", "프리셋"),
    "step_train": ("Train", "학습"),
    "step_review": ("Review", "검토"),
    "step_troubleshoot": ("Troubleshoot", "문제 해결"),
    "err_unexpected": ("Something went wrong inside the app ({error}). The details are in the console.",
                       "앱 내부에서 문제가 생겼습니다({error}). 자세한 내용은 콘솔에 있습니다."),
    "yes": ("yes", "예"),
    "no": ("no", "아니오"),
    "step": ("step", "스텝"),
    "run": ("Run", "실행"),
    "refresh": ("Refresh", "새로 고침"),
    # paths and uploads
    "err_empty_path": ("{what}: the path is empty", "{what}: 경로가 비어 있습니다"),
    "err_outside_workspace": (
        "{what}: {path} is outside the workspace {workspace}. While the app is shared (or open to the network) "
        "only folders and files inside the workspace can be used; upload the pictures instead.",
        "{what}: {path}은(는) 작업 폴더 {workspace} 밖에 있습니다. 앱이 공유 중(또는 네트워크에 열림)일 때는 작업 폴더 "
        "안의 폴더와 파일만 쓸 수 있습니다. 대신 그림을 업로드하세요."),
    "err_outside_folder": ("{what}: {path} is not inside {folder}", "{what}: {path}은(는) {folder} 안에 있지 않습니다"),
    "err_unusable_path": ("{what}: {path} cannot be used ({reason})", "{what}: {path}은(는) 쓸 수 없습니다({reason})"),
    "err_link_outside": (
        "{what}: {link} is a link to {target}, outside the workspace {workspace}. While the app is shared (or open "
        "to the network) links inside a dataset may only lead inside the workspace; copy the file in instead.",
        "{what}: {link}은(는) 작업 폴더 {workspace} 밖의 {target}을(를) 가리키는 링크입니다. 앱이 공유 중(또는 "
        "네트워크에 열림)일 때는 데이터셋 안의 링크가 작업 폴더 안만 가리킬 수 있습니다. 파일을 복사해 넣으세요."),
    "err_hub_while_shared": (
        "model.base: {base} is a hub id. While the app is shared (or open to the network) it loads only model "
        "folders and files inside the workspace {workspace}; download the model there first.",
        "model.base: {base}은(는) 허브 id입니다. 앱이 공유 중(또는 네트워크에 열림)일 때는 작업 폴더 {workspace} "
        "안의 모델 폴더와 파일만 불러옵니다. 먼저 그곳에 모델을 내려받으세요."),
    "err_zip_member": ("{name}: {member} is not what the archive's header says (damaged or crafted); nothing of it "
                       "was kept", "{name}: {member}이(가) 압축 파일 머리말과 다릅니다(손상 또는 조작). 그 파일은 "
                       "남기지 않았습니다"),
    "err_bad_zip": ("{name} is not a readable zip file", "{name}은(는) 읽을 수 있는 zip 파일이 아닙니다"),
    "err_zip_too_many": ("{name} holds {n} files; the limit is {limit}", "{name}에 파일이 {n}개 있습니다. 한도는 {limit}개입니다"),
    "err_zip_too_big": ("{name} unpacks to more than {limit} GiB; split it or copy the folder instead",
                        "{name}을(를) 풀면 {limit} GiB가 넘습니다. 나누거나 폴더를 직접 복사하세요"),
    "err_no_upload": ("choose pictures or a zip file to upload first", "먼저 올릴 그림이나 zip 파일을 고르세요"),
    # 1 dataset
    "ds_intro": ("Pick the folder of training pictures (or upload them) and type the trigger word, then **Scan**.",
                 "학습할 그림 폴더를 고르고(또는 업로드하고) 트리거 단어를 적은 뒤 **검사**를 누르세요."),
    "scan": ("Scan", "검사"),
    "scanning": ("Scanning the pictures…", "그림을 검사하는 중…"),
    "drawing_thumbnails": ("Making the thumbnails and the report…", "미리보기와 보고서를 만드는 중…"),
    "scan_done": ("Scanned: {n} usable pictures.", "검사 완료: 쓸 수 있는 그림 {n}장."),
    "demo_prior_dropped": (" The demo's prior images (its world scenes) were taken out of 'Prior images folder': they "
                           "belong to the demo character.",
                           " 데모의 사전 보존 그림(데모 세계 장면)은 데모 캐릭터용이라 '사전 보존 그림 폴더'에서 뺐습니다."),
    "next_steps": ("Next: steps →", "다음: 스텝 →"),
    "upload_title": ("Upload pictures or a zip", "그림이나 zip 업로드"),
    "upload_files": ("Pictures, captions (.txt) or a .zip", "그림, 캡션(.txt) 또는 .zip"),
    "upload_name": ("Dataset name (a folder in the workspace)", "데이터셋 이름 (작업 폴더 안의 폴더)"),
    "import": ("Upload into the workspace", "작업 폴더로 올리기"),
    "importing": ("Copying into the workspace…", "작업 폴더로 복사하는 중…"),
    "imported": ("{n} files copied into {folder} ({skipped} skipped).", "{n}개 파일을 {folder}에 복사했습니다({skipped}개 건너뜀)."),
    "problems": ("Problems and what to do", "문제와 할 일"),
    "no_problems": ("no problems found", "문제가 없습니다"),
    "col_file": ("file", "파일"),
    "col_severity": ("severity", "심각도"),
    "col_what_to_do": ("problem / what to do", "문제 / 할 일"),
    "sev_error": ("error (skipped)", "오류 (제외됨)"),
    "sev_warning": ("warning", "경고"),
    "sev_info": ("info", "참고"),
    "size_hist": ("Shortest side (px)", "짧은 변 (px)"),
    "aspect_hist": ("Aspect ratio (w:h)", "가로세로 비율"),
    "buckets": ("Buckets", "버킷"),
    "col_bucket": ("bucket", "버킷"),
    "col_images": ("pictures", "그림"),
    "col_image_repeats": ("pictures × repeats", "그림 × 반복"),
    "col_batches": ("batches per epoch", "에폭당 배치"),
    "tags": ("Tag frequencies", "태그 빈도"),
    "col_tag": ("tag", "태그"),
    "col_captions": ("captions", "캡션 수"),
    "col_share": ("share", "비율"),
    "thumbnails": ("Pictures (click one to edit its caption)", "그림 (누르면 캡션을 고칠 수 있습니다)"),
    "thumbs_shown": ("{shown} of {total} pictures shown below (the first ones); the report above counts them all.",
                     "아래에는 그림 {total}장 중 앞의 {shown}장만 보입니다. 위 보고서는 모두 셉니다."),
    "caption_file": ("Picture", "그림"),
    "caption_text": ("Caption", "캡션"),
    "caption_save": ("Save caption", "캡션 저장"),
    "caption_saved": ("Caption of {file} saved.", "{file}의 캡션을 저장했습니다."),
    "err_pick_picture": ("click a picture first", "먼저 그림을 누르세요"),
    "err_unknown_kb_id": ("there is no {kind} {id!r}; pick one from the list", "{kind} {id!r}은(는) 없습니다. 목록에서 고르세요"),
    "err_not_in_dataset": ("{file} is not a picture of the scanned dataset; scan, then click a picture",
                           "{file}은(는) 검사한 데이터셋의 그림이 아닙니다. 검사한 뒤 그림을 누르세요"),
    "err_caption_too_long": ("the caption is {n} characters long; at most {limit} are kept (CLIP reads 77 tokens)",
                             "캡션이 {n}자입니다. 최대 {limit}자까지입니다(CLIP은 77토큰만 읽습니다)"),
    "err_not_utf8": ("{what}: it holds a character that cannot be saved as text (a lone surrogate); retype it",
                     "{what}: 텍스트로 저장할 수 없는 문자(짝 없는 서로게이트)가 있습니다. 다시 입력하세요"),
    "err_no_usable": ("no usable pictures yet; fix the problems listed above", "아직 쓸 수 있는 그림이 없습니다. 위의 문제를 고치세요"),
    "summary": ("**{images}** usable pictures, **{captions}** with captions, **{repeats}** pictures × repeats. "
                "Problems: {errors} errors, {warnings} warnings, {infos} notes.",
                "쓸 수 있는 그림 **{images}**장, 캡션 있는 그림 **{captions}**장, 그림 × 반복 **{repeats}**. "
                "문제: 오류 {errors}, 경고 {warnings}, 참고 {infos}."),
    "summary_folder": ("- `{name}`: {images} pictures × {repeats} repeats", "- `{name}`: 그림 {images}장 × 반복 {repeats}"),
    "summary_trigger": ('- trigger "{trigger}" in {share}% of captions', '- 트리거 "{trigger}"가 캡션의 {share}%에 있음'),
    "summary_prior": ("- **{n}** prior images (`reg/` folders) train beside them, captioned without the trigger; "
                      "pictures × repeats counts them too",
                      "- 사전 보존 그림 **{n}**장(`reg/` 폴더)도 함께 학습합니다. 캡션에는 트리거가 없고, 그림 × 반복에 포함됩니다"),
    # 2 steps
    "plan_intro": ("How long to train. The count below is the real one: a batch never mixes bucket sizes.",
                   "얼마나 학습할지 정합니다. 아래 값이 실제 스텝 수입니다. 한 배치에는 같은 버킷의 그림만 들어갑니다."),
    "per_bucket": ("Per bucket", "버킷별"),
    "plan_totals": ("Bucket-aware total: **{total}** optimizer steps ({spe} per epoch × {epochs} epochs); the "
                    "familiar formula alone gives **{naive}**.",
                    "버킷을 반영한 총합: **{total}** 스텝 (에폭당 {spe} × {epochs} 에폭). 익숙한 공식만으로는 **{naive}**."),
    "plan_saves": ("Checkpoints at steps {ckpts}; samples at steps {samples}.",
                   "체크포인트: {ckpts} 스텝. 샘플: {samples} 스텝."),
    "err_scan_first": ("Scan the dataset first ({error})", "먼저 데이터셋을 검사하세요 ({error})"),
    "next_preset": ("Next: preset →", "다음: 프리셋 →"),
    "zone_under": ("under", "부족"),
    "zone_fit": ("fit", "적정"),
    "zone_over": ("over", "과다"),
    "preset_dose": ("Dose **{dose}** over {total} steps (this preset's zone {low}–{high}): **{zone}**.",
                    "{total} 스텝의 학습량 **{dose}** (이 프리셋의 범위 {low}–{high}): **{zone}**."),
    # 3 preset
    "memory_title": ("Will it fit? Estimated peak memory", "들어갈까? 추정 최대 메모리"),
    "memory_fit": ("Fit to memory", "메모리에 맞추기"),
    "memory_free_unknown": ("this device does not report its free memory", "이 장치는 남은 메모리를 알려 주지 않습니다"),
    "preset_intro": ("Pick a preset (one click), then adjust rank, alpha and the learning rate if you like.",
                     "프리셋을 한 번 눌러 고르고, 원하면 rank, alpha, 학습률을 조정하세요."),
    "preset_label": ("Preset", "프리셋"),
    "preset_load": ("Load", "불러오기"),
    "preset_save": ("Save as my preset", "내 프리셋으로 저장"),
    "user_preset_name": ("My preset name", "내 프리셋 이름"),
    "preset_applied": ("Preset {name} applied.", "프리셋 {name}을(를) 적용했습니다."),
    "preset_saved": ("Saved as {path}.", "{path}에 저장했습니다."),
    "err_pick_preset": ("pick a preset first", "먼저 프리셋을 고르세요"),
    "err_preset_name": ("give your preset a name", "프리셋 이름을 적으세요"),
    "kohya_import": ("Import a kohya config", "kohya 설정 가져오기"),
    "kohya_intro": ("Drop the `.json` kohya_ss saves, or an sd-scripts `.toml` (with its dataset config beside it). The "
                    "fields are filled and a table says what each setting became, what was changed and why, and "
                    "what is not carried over.",
                    "kohya_ss가 저장한 `.json`이나 sd-scripts `.toml`(데이터셋 설정과 함께)을 올리세요. 칸이 채워지고, 표가 "
                    "각 설정이 무엇이 되었는지, 무엇을 왜 바꿨는지, 무엇을 옮기지 않았는지 알려 줍니다."),
    "kohya_file": ("kohya_ss .json or sd-scripts .toml", "kohya_ss .json 또는 sd-scripts .toml"),
    "kohya_imported": ("Imported; the fields are filled. The whole config (settings without a field too) is saved as "
                       "{path}.", "가져왔습니다. 칸을 채웠습니다. 칸이 없는 설정까지 담은 전체 설정은 {path}에 저장했습니다."),
    "err_kohya_no_file": ("choose a kohya config file first", "먼저 kohya 설정 파일을 고르세요"),
    "err_kohya_files": ("give one kohya_ss .json or sd-scripts .toml, and at most one dataset config beside it",
                        "kohya_ss .json 또는 sd-scripts .toml 하나와, 곁들일 데이터셋 설정은 하나까지만 올리세요"),
    "err_preset_builtin": ("{name} is a built-in preset; choose another name", "{name}은(는) 내장 프리셋입니다. 다른 이름을 쓰세요"),
    "advanced": ("Advanced settings", "고급 설정"),
    "device_info": ("This machine trains on **{device}**; bf16 supported: **{bf16}**.",
                    "이 컴퓨터는 **{device}**에서 학습합니다. bf16 지원: **{bf16}**."),
    "config_and_cli": ("The exact config and command", "정확한 설정과 명령"),
    "write_config": ("Write the config file", "설정 파일 쓰기"),
    "config_written": ("Config written to {path}.", "설정을 {path}에 썼습니다."),
    "cli_file": ("the whole config, written to {path} on Start (or with the button)",
                 "전체 설정. 시작할 때(또는 버튼으로) {path}에 씁니다"),
    "cli_sets": ("or the preset plus only what differs from it", "또는 프리셋과 그와 다른 값만"),
    "base_ok": ("Base model: `{base}`", "기반 모델: `{base}`"),
    "next_train": ("Next: train →", "다음: 학습 →"),
    # 4 train
    "start": ("Start", "시작"),
    "stop": ("Stop", "정지"),
    "pause": ("Pause", "일시정지"),
    "continue": ("Continue", "계속"),
    "sample_now": ("Sample now", "지금 샘플"),
    "save_now": ("Save now", "지금 저장"),
    "started": ("Training started.", "학습을 시작했습니다."),
    "stop_sent": ("Stopping after this step; a final checkpoint is written.", "이 스텝이 끝나면 멈추고 마지막 체크포인트를 씁니다."),
    "pause_sent": ("Pausing after this step: its checkpoint is written and the GPU is freed; Continue carries on.",
                   "이 스텝이 끝나면 체크포인트를 쓰고 GPU를 비운 뒤 일시정지합니다. 계속을 누르면 이어 갑니다."),
    "continued": ("Continuing {run} from step {step}.", "{run}을(를) {step} 스텝부터 이어 갑니다."),
    "err_no_paused": ("No paused run to continue.", "이어 갈 일시정지된 실행이 없습니다."),
    "sample_now_sent": ("Sample pictures will appear below after this step.", "이 스텝이 끝나면 아래에 샘플 그림이 나옵니다."),
    "save_now_sent": ("A checkpoint is saved after this step.", "이 스텝이 끝나면 체크포인트를 저장합니다."),
    "err_run_active": ("A training run is already active (perhaps started from another tab); stop it first or "
                       "watch it here.",
                       "이미 학습이 진행 중입니다(다른 탭에서 시작했을 수 있습니다). 먼저 멈추거나 여기서 지켜보세요."),
    "err_no_run": ("No training run is active.", "진행 중인 학습이 없습니다."),
    "status_idle": ("idle", "대기"),
    "status_starting": ("starting", "시작 중"),
    "status_running": ("running", "학습 중"),
    "status_finished": ("finished", "완료"),
    "status_stopped": ("stopped", "정지됨"),
    "status_paused": ("paused", "일시정지됨"),
    "status_guard_stopped": ("stopped by the numerics guard", "수치 감시로 정지됨"),
    "status_failed": ("failed", "실패"),
    "status_interrupted": ("interrupted", "중단됨"),
    "status_resume_from": ("resume from step {step}", "{step} 스텝부터 이어서 학습 가능"),
    "status_no_resume": ("no checkpoint to resume from", "이어서 학습할 체크포인트 없음"),
    "status_step": ("step {step} / {total}", "{step} / {total} 스텝"),
    "status_eta": ("ETA {eta}", "남은 시간 {eta}"),
    "peak": ("peak", "최대"),
    "progress_cache_latents": ("Caching latents: {done} / {total}", "잠재 캐시 만드는 중: {done} / {total}"),
    "progress_sampling": ("Drawing the sample pictures of step {step}…", "{step}스텝의 샘플 그림을 그리는 중…"),
    "progress_other": ("Working: {done} / {total}", "작업 중: {done} / {total}"),
    "next_review": ("Next: review →", "다음: 검토 →"),
    "next_troubleshoot": ("Next: troubleshoot →", "다음: 문제 해결 →"),
    "to_troubleshoot": ("Go to Troubleshoot →", "문제 해결로 →"),
    "samples": ("Samples", "샘플"),
    "alert_stopped": ("Training stopped: a value became NaN/Inf", "학습 정지: 값이 NaN/Inf가 되었습니다"),
    "alert_seen": ("A value became NaN/Inf (the guard chose: {action})", "값이 NaN/Inf가 되었습니다 (감시의 조치: {action})"),
    "alert_first": ("What broke first", "먼저 망가진 것"),
    "alert_where": ("Where", "위치"),
    "alert_step": ("At step", "스텝"),
    "alert_files": ("Batch files", "배치 파일"),
    "alert_numbers": ("Settings", "설정"),
    "alert_try": ("Try first:", "먼저 해 볼 것:"),
    "action_stop": ("stop", "정지"),
    "action_skip": ("skip the step", "그 스텝 건너뛰기"),
    "action_rollback": ("roll back", "되돌리기"),
    "signal_precision_fallback": ("Precision changed", "정밀도 변경"),
    "signal_save_refused": ("Save refused", "저장 거부"),
    "broke_loss": ("the loss", "손실(loss)"),
    "broke_grad": ("the gradient (before any weight changed)", "그라디언트 (가중치가 바뀌기 전)"),
    "broke_param": ("the LoRA weights", "LoRA 가중치"),
    "broke_ema": ("the EMA copy of the weights", "가중치의 EMA 사본"),
    # 5 review
    "measures": ("Per sampled step: leakage (no-trigger picture vs the base model's), burn, likeness",
                 "샘플 스텝별: 누출(트리거 없는 그림 vs 기반 모델), 색 탐, 닮음"),
    "col_dose": ("dose", "학습량"),
    "col_leakage": ("leakage", "누출"),
    "col_burn": ("burn", "색 탐"),
    "col_likeness": ("likeness", "닮음"),
    "col_adherence": ("adherence", "프롬프트 준수"),
    "checkpoint": ("Checkpoint (LoRA file)", "체크포인트 (LoRA 파일)"),
    "sweep": ("Strength sweep 0.6 / 0.8 / 1.0 / 1.2", "강도 비교 0.6 / 0.8 / 1.0 / 1.2"),
    "sweep_title": ("Strength sweep", "강도 비교"),
    "sweep_loading": ("Loading the base model and the LoRA…", "기반 모델과 LoRA를 불러오는 중…"),
    "sweeping_at": ("Drawing at strength {strength}: picture {done} of {total}…",
                    "강도 {strength}로 그리는 중: 그림 {total}장 중 {done}장째…"),
    "sweep_done": ("{n} pictures for {ckpt}.", "{ckpt}: 그림 {n}장."),
    "err_sweep_while_training": ("Wait until the training run ends (or stop it): the sweep needs the same "
                                 "memory and cores.", "학습이 끝날 때까지 기다리거나 멈추세요. 강도 비교는 같은 메모리와 "
                                 "코어를 씁니다."),
    "err_pick_checkpoint": ("pick a checkpoint first", "먼저 체크포인트를 고르세요"),
    "download": ("Download this LoRA", "이 LoRA 내려받기"),
    "download_file": ("LoRA file", "LoRA 파일"),
    "download_preparing": ("Preparing the file…", "파일을 준비하는 중…"),
    "review_loading": ("Measuring the sample pictures…", "샘플 그림을 재는 중…"),
    "download_ready": ("{name} is ready below.", "{name}을(를) 아래에서 받으세요."),
    "download_ready_embedding": ("{name} is ready below: the LoRA and its trigger embedding {trigger}.safetensors. "
                                 "Put the embedding in your UI's embeddings folder and write {trigger} in prompts.",
                                 "{name}을(를) 아래에서 받으세요: LoRA와 트리거 임베딩 {trigger}.safetensors. 임베딩은 "
                                 "쓰는 UI의 embeddings 폴더에 넣고 프롬프트에 {trigger}를 씁니다."),
    "no_runs": ("No runs yet: train one first.", "아직 실행이 없습니다. 먼저 학습하세요."),
    "no_samples": ("This run has no sample pictures.", "이 실행에는 샘플 그림이 없습니다."),
    "no_checkpoints": ("This run saved no checkpoint.", "이 실행은 체크포인트를 저장하지 않았습니다."),
    "recommended": ("Recommended: {label}", "추천: {label}"),
    # 6 troubleshoot
    "symptom": ("What do you see? (every symptom the doctor knows)", "무엇이 보이나요? (알려진 모든 증상)"),
    "one_change": ("One change for the next run", "다음 실행에서 바꿀 한 가지"),
    "start_change": ("Start a new run with this one change", "이 한 가지만 바꿔 새로 학습"),
    "change_started": ("New run started with one change: {change}", "한 가지를 바꿔 새로 시작했습니다: {change}"),
    "err_pick_rx": ("pick a change first", "먼저 바꿀 것을 고르세요"),
    "err_rx_no_change": ("this prescription is advice, not a setting to change", "이 처방은 설정 변경이 아니라 조언입니다"),
    "err_rx_noop": ("this run already has that setting; pick another change", "이 실행은 이미 그 설정입니다. 다른 것을 고르세요"),
    "err_needs_bf16": ("this change needs bf16, which this machine's device does not support",
                       "이 변경에는 bf16이 필요한데 이 컴퓨터의 장치는 지원하지 않습니다"),
    "journal": ("Journal of runs", "실행 기록"),
    "col_parent": ("parent", "부모"),
    "col_change": ("the change", "바꾼 것"),
    "col_status": ("outcome", "결과"),
    "col_best": ("best checkpoint", "최선의 체크포인트"),
    "no_diagnose": ("The automatic diagnosis is not available in this build.", "이 빌드에서는 자동 진단을 쓸 수 없습니다."),
    "findings_title": ("Findings for this run ({status})", "이 실행의 진단 ({status})"),
    "observed": ("Observed", "관찰"),
    "nothing_unusual": ("nothing unusual", "특이사항 없음"),
    "likely_causes": ("Likely causes", "가능한 원인"),
    "prescriptions": ("Prescriptions (change one thing at a time)", "처방 (한 번에 하나만 바꾸세요)"),
    "causes": ("Causes, most likely first", "원인 (가능성 높은 순)"),
    "parent_compare": ("Against its parent: changed {changes}; resolved {resolved}; new {new}; still {still}.",
                       "부모 실행과 비교: 바꾼 것 {changes}; 사라진 문제 {resolved}; 새 문제 {new}; 남은 문제 {still}."),
    "group_numerics": ("Numbers", "수치"),
    "group_late_blur": ("Late blur", "후반 흐려짐"),
    "group_prompt_specific": ("Only some prompts", "일부 프롬프트만"),
    "group_pictures": ("Pictures", "그림"),
    "group_strength": ("Strength", "강도"),
    "group_data": ("Data", "데이터"),
    "group_speed": ("Speed", "속도"),
    # the one verdict (trainer.doctor.verdict), shown alike on Plan, Review and Troubleshoot; dangerous settings ask first
    "verdict_run": ("Verdict: {label}", "판정: {label}"),
    "verdict_plan": ("Expected verdict: {label}", "예상 판정: {label}"),
    "verdict_rests_on": ("What it rests on", "근거"),
    "col_verdict": ("verdict", "판정"),
    "lesser_causes": ("Also weighed, less likely for this run", "함께 따져 본 원인 (이 실행에서는 가능성 낮음)"),
    "lesser_here": ("less likely for this run", "이 실행에서는 가능성 낮음"),
    "nothing_to_fix": ("Nothing to change: use the recommended checkpoint.", "바꿀 것이 없습니다. 추천 체크포인트를 쓰세요."),
    "weak_signal": ("weak evidence here", "여기서는 약한 근거"),
    "no_earlier_checkpoint": ("this run has no earlier checkpoint to use", "이 실행에는 쓸 수 있는 앞 시점 체크포인트가 없습니다"),
    "rx_wrong_way": ("not for this run: it would move {setting} the other way", "이 실행에는 해당 없음: {setting}을(를) 반대로 옮깁니다"),
    "err_rx_wrong_way": ("in this run that change would move {setting} the other way ({old} → {new}); pick another change",
                         "이 실행에서는 그 변경이 {setting}을(를) 반대 방향으로 옮깁니다({old} → {new}). 다른 것을 고르세요"),
    "confirm_title": ("These settings are far from the preset's. Start anyway?",
                      "설정이 프리셋과 크게 다릅니다. 그래도 시작할까요?"),
    "confirm_hint": ("Press “Start anyway” to train with them, or change them first.",
                     "이대로 학습하려면 ‘그래도 시작’을 누르고, 아니면 먼저 바꾸세요."),
    "confirm_start": ("Start anyway", "그래도 시작"),
}


TEXTS.update({f"kind_{kind}": words.TEXTS[f"kind.{kind}"] for kind in PROMPT_KINDS})  # the sample prompts' kinds


def t(key: str, lang: str = "en", **values: object) -> str:
    en, ko = TEXTS[key]
    text = ko if lang == "ko" else en
    return text.format(**values) if values else text


def signal_label(signal: str, lang: str) -> str:
    """A finding's or alert's signal id for people: the UI's own words, else the knowledge base's title."""
    if f"signal_{signal}" in TEXTS:
        return t(f"signal_{signal}", lang)
    from trainer.doctor.kb import load_kb

    entry = load_kb().signals.get(signal)
    return entry.text("title", lang) if entry is not None else signal


def kind_label(kind: str, lang: str) -> str:
    """A sample-prompt kind for people; ``kind#3`` (two prompts of one kind) keeps its number."""
    return words.say(prompt_kind(kind), lang)
