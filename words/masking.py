"""The mask maker: its makers, its run and Undo, and the Dataset step's mask panel."""

TEXTS = {
    "mask.kind.clipseg": ("CLIPSeg", "CLIPSeg"),
    "mask.kind.rembg": ("background remover", "배경 제거기"),
    "mask.error.kind": ('unknown mask maker "{kind}"; choose one of {kinds}',
                        '"{kind}"라는 마스크 생성기는 없습니다. {kinds} 중에서 고르세요.'),
    "mask.error.model_local": ("the {kind} model in {model} could not be loaded ({reason}); CLIPSeg needs its folder as "
                               "downloaded (config.json, the weights, the processor's files), a background remover "
                               "an .onnx file or a folder with model.onnx",
                               "{model}의 {kind} 모델을 불러오지 못했습니다({reason}). CLIPSeg는 내려받은 그대로의 폴더"
                               "(config.json, 가중치, 프로세서 파일)가, 배경 제거기는 .onnx 파일이나 model.onnx가 든 "
                               "폴더가 필요합니다."),
    "mask.error.model_hub": ('the {kind} model "{model}" could not be loaded ({reason}); check the name, or download '
                             'it once with a network and give its folder or file',
                             '{kind} 모델을 불러오지 못했습니다: "{model}" ({reason}). 이름을 확인하거나, 네트워크가 될 '
                             '때 한 번 내려받아 그 폴더나 파일을 지정하세요.'),
    "mask.error.no_prompt": ("CLIPSeg needs words for the subject to mask (e.g. \"a person\" or \"a dog, a hat\")",
                             'CLIPSeg에는 마스크할 대상을 말하는 단어가 필요합니다(예: "a person", "a dog, a hat").'),
    "mask.error.threshold": ("mask threshold {value}: give a number from 0 (soft masks) to below 1",
                             "마스크 기준값 {value}: 0(부드러운 마스크)부터 1 미만까지의 수를 넣으세요."),
    "mask.error.expand": ("mask expand {value}: give whole pixels from 0 to {most}",
                          "마스크 넓히기 {value}: 0부터 {most}까지의 픽셀 수를 넣으세요."),
    "mask.error.no_pictures": ("{root} holds no pictures to mask (PNG, JPG, WEBP, BMP or GIF)",
                               "{root}에 마스크를 만들 그림(PNG, JPG, WEBP, BMP, GIF)이 없습니다."),
    "mask.error.nothing_to_undo": ("nothing to undo in {root}: no mask change of this app is recorded there",
                                   "{root}에는 되돌릴 것이 없습니다. 이 앱이 만든 마스크 기록이 없습니다."),
    "mask.error.unreadable": ("{n} picture(s) could not be read and have no new mask: {files}; the others were "
                              "masked. Save them again as PNG/JPG or delete them",
                              "그림 {n}장을 읽지 못해 새 마스크가 없습니다: {files}. 나머지는 마스크를 만들었습니다. "
                              "PNG/JPG로 다시 저장하거나 지우세요."),
    "mask.error.failed": ("the mask maker failed on {file} ({reason}); the {n} mask(s) made before it are written "
                          "(Undo takes them back) and the rest have none yet",
                          "마스크 생성기가 {file}에서 실패했습니다({reason}). 그 전에 만든 마스크 {n}개는 저장했고"
                          "(되돌리기로 되돌릴 수 있음) 나머지에는 아직 마스크가 없습니다."),
    "mask.change.run": ("{kind} ({model}) masks, {mode} mode", "{kind}({model}) 마스크, {mode} 방식"),
    "mask.undone": ("undone: {what} ({n} mask files put back as they were)",
                    "되돌림: {what}(마스크 파일 {n}개를 원래대로 돌려놓음)"),
    "mask.summary": ("{written} masks written, {kept} pictures kept their own, {failed} unreadable ({seconds:.1f} s)",
                     "마스크 {written}개 작성, 원래 마스크를 둔 그림 {kept}장, 읽지 못한 그림 {failed}장({seconds:.1f}초)"),
    "mask.odd": ("{n} mask(s) cover almost none or almost all of their picture: {files}. Look at them in the preview; "
                 "other words for the subject, another threshold or the other maker may do better",
                 "마스크 {n}개가 그림을 거의 덮지 않거나 거의 다 덮습니다: {files}. 미리 보기로 확인하세요. 대상을 "
                 "다른 말로 적거나 기준값이나 생성기를 바꾸면 나아질 수 있습니다."),
    "mask.undo_hint": ("undo with: python -m trainer mask {root} --undo",
                       "되돌리기: python -m trainer mask {root} --undo"),
    "mask.turn_on": ("masks are used once masked training is on (Preset step, advanced: dataset.masked_loss)",
                     "마스크는 마스크 학습을 켜야 쓰입니다(프리셋 단계, 고급: dataset.masked_loss)."),
    # the Dataset step's panel
    "ui.mask_title": ("Masks for masked training", "마스크 학습용 마스크"),
    "ui.mask_intro": ("With masked training on, only the masked part of a picture teaches: the subject, not its "
                   "background. Masks are written beside the pictures as name-masklabel.png (white learns), where "
                   "OneTrainer writes them, and can be edited in any paint program. **CLIPSeg** finds what the words "
                   "name; a **background remover** (an ONNX model such as RMBG-1.4 or U²-Net) takes whatever stands "
                   "in front. Preview a few first; Undo takes back the last run.",
                   "마스크 학습을 켜면 그림에서 마스크 부분만 배웁니다. 배경이 아니라 대상만 배우는 것입니다. "
                   "마스크는 그림 옆에 이름-masklabel.png(흰 부분을 배움)로 저장되며 OneTrainer와 같은 위치이고, "
                   "어떤 그림 프로그램으로도 고칠 수 있습니다. **CLIPSeg**는 단어가 가리키는 것을 찾고, **배경 "
                   "제거기**(RMBG-1.4 같은 ONNX 모델)는 앞에 있는 것을 잡습니다. 먼저 몇 장 미리 보고, "
                   "되돌리기는 마지막 실행을 되돌립니다."),
    "ui.mask_kind": ("Mask maker", "마스크 생성기"),
    "ui.mask_model": ("Model (folder, .onnx file or hub id; empty: the usual one)",
                   "모델 (폴더, .onnx 파일, 허브 id. 비우면 기본 모델)"),
    "ui.mask_prompt": ("What to mask (CLIPSeg; commas between several)", "마스크할 대상 (CLIPSeg, 여러 개는 쉼표로)"),
    "ui.mask_threshold": ("Threshold (0 = soft mask)", "기준값 (0 = 부드러운 마스크)"),
    "ui.mask_expand": ("Grow the mask by (pixels)", "마스크 넓히기 (픽셀)"),
    "ui.mask_mode": ("Which pictures", "어떤 그림에"),
    "ui.mask_mode_fill": ("only those without a mask", "마스크가 없는 그림만"),
    "ui.mask_mode_overwrite": ("all (replace masks)", "모두 (마스크 바꿈)"),
    "ui.mask_preview": ("Preview 4", "4장 미리 보기"),
    "ui.mask_run": ("Make masks", "마스크 만들기"),
    "ui.mask_undo": ("Undo last masks", "마지막 마스크 되돌리기"),
    "ui.mask_loading": ("loading the mask maker…", "마스크 생성기를 불러오는 중…"),
    "ui.mask_stopping": ("stopping after this picture; the masks made by then are written",
                         "이번 그림 뒤에 멈춥니다. 그때까지 만든 마스크는 저장합니다."),
    "ui.mask_stopped": ("Stopped: the masks made so far are written, the other pictures have none yet.",
                        "멈춤: 그때까지 만든 마스크는 저장했고, 나머지 그림에는 아직 마스크가 없습니다."),
    "ui.mask_gallery": ("Masked part (the rest dimmed)", "마스크 부분 (나머지는 어둡게)"),
    "ui.mask_preview_done": ("{n} preview(s), nothing written.", "미리 보기 {n}장, 아무것도 저장하지 않았습니다."),
}
