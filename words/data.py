"""Dataset scan: each problem a file can have and what to do about it (``problem.<kind>``), and the tag warning."""

TEXTS = {
    "problem.zero_byte": ("the file is empty (0 bytes); copy it again or delete it",
                          "빈 파일입니다(0바이트). 다시 복사하거나 지우세요."),
    "problem.not_an_image": ("not a picture (another file renamed to {suffix}?); delete it or save it again as PNG/JPG",
                             "그림 파일이 아닙니다(다른 파일의 확장자만 {suffix}로 바꾼 것 같습니다). 지우거나 PNG/JPG로 다시 저장하세요."),
    "problem.unreadable_image": ("the picture is damaged or cut off ({reason}); export or download it again, or delete it",
                                 "그림이 손상되었거나 잘려 있습니다({reason}). 다시 내보내거나 내려받거나, 지우세요."),
    "problem.decompression_bomb": ("claims {pixels} pixels, above the safe limit of {limit}; not decoded. Shrink it (4096 px on the long side is plenty)",
                                   "{pixels} 픽셀이라고 적혀 있어 안전 한도({limit})를 넘습니다. 열지 않았습니다. 긴 변 4096px 정도로 줄이세요."),
    "problem.too_small": ("{w}×{h} is far too small for resolution {res} (shortest side under {min_side} px); use a bigger original or delete it",
                          "{w}×{h} 그림은 해상도 {res}에 비해 너무 작습니다(짧은 변 {min_side}px 미만). 더 큰 원본을 쓰거나 지우세요."),
    "problem.unsupported_format": ("{suffix} files are not read; convert it to PNG or JPG to use it",
                                   "{suffix} 파일은 읽지 않습니다. 쓰려면 PNG나 JPG로 바꾸세요."),
    "problem.duplicate": ("the same file as {original}; skipped so it is not trained twice (use repeats to weight pictures)",
                          "{original} 파일과 똑같아 건너뜁니다(두 번 학습되지 않게). 비중을 높이려면 반복 횟수를 쓰세요."),
    "problem.near_copy": ("looks like the same picture as {original} (similarity {similarity:.3f}: resized, re-encoded or recoloured); "
                          "that picture is trained on twice as often as the others, which pulls the LoRA toward it. Keep one, "
                          "unless you mean to weight it (repeats do that openly)",
                          "{original} 파일과 같은 그림으로 보입니다(유사도 {similarity:.3f}: 크기·압축·색만 바뀜). 그 그림이 "
                          "다른 그림보다 두 배 자주 학습되어 LoRA가 그 쪽으로 끌립니다. 일부러 비중을 높인 것이 아니면 하나만 두세요"
                          "(비중은 반복 횟수로 드러나게 줄 수 있습니다)."),
    "problem.zero_repeats": ("folder name starts with 0_ (0 repeats), so its pictures are skipped; rename it to 1_... to use them",
                             "폴더 이름이 0_로 시작해(반복 0회) 안의 그림을 건너뜁니다. 쓰려면 1_...로 바꾸세요."),
    "problem.high_repeats": ("the folder name means {repeats} repeats (kohya N_name naming); rename it if that number is not meant as repeats",
                             "폴더 이름대로면 {repeats}회 반복입니다(kohya의 N_이름 규칙). 반복 횟수가 아니라면 이름을 바꾸세요."),
    "problem.low_resolution": ("{w}×{h} is enlarged {scale:.1f}× to fill its {bw}×{bh} bucket and will look soft; use a bigger original if you have one",
                               "{w}×{h} 그림은 {bw}×{bh} 버킷을 채우려고 {scale:.1f}배 확대되어 흐릿해집니다. 더 큰 원본이 있으면 쓰세요."),
    "problem.extreme_aspect": ("aspect {ratio:.1f}:1 is extreme; it is cropped hard to {bw}×{bh}. Crop it yourself to keep what matters",
                               "가로세로 비율 {ratio:.1f}:1은 너무 극단적이라 {bw}×{bh} 크기로 맞추며 많이 잘립니다. 중요한 부분이 남도록 직접 자르세요."),
    "problem.missing_caption": ("no caption file {caption}; it trains with {fallback}. Write one naming what should stay changeable (outfit, pose, background)",
                                "캡션 파일({caption})이 없어 {fallback} 학습합니다. 바뀔 수 있어야 할 것(옷, 자세, 배경)을 적은 캡션을 만드세요."),
    "problem.empty_caption": ("the caption file is empty; it trains with {fallback}. Describe what should stay changeable (outfit, pose, background)",
                              "캡션 파일이 비어 있어 {fallback} 학습합니다. 바뀔 수 있어야 할 것(옷, 자세, 배경)을 적으세요."),
    "problem.caption_not_utf8": ("the caption file is not UTF-8 text, so it trains with {fallback}; save it as UTF-8 (Notepad: Save as, Encoding UTF-8)",
                                 "캡션 파일이 UTF-8이 아니어서 {fallback} 학습합니다. UTF-8로 저장하세요(메모장: 다른 이름으로 저장, 인코딩 UTF-8)."),
    "problem.no_trigger": ('the caption lacks the trigger "{trigger}"; add it so the LoRA binds to that word',
                           '캡션에 트리거 "{trigger}"가 없습니다. LoRA가 그 단어에 묶이도록 넣으세요.'),
    "problem.animated": ("animated ({frames} frames); only the first frame is used",
                         "움직이는 그림({frames}프레임)이라 첫 프레임만 씁니다."),
    "problem.cmyk": ("CMYK (print) colours, converted to RGB; colours may shift a little. Export as RGB for exact colours",
                     "CMYK(인쇄용) 색이라 RGB로 바꿉니다. 색이 조금 달라질 수 있으니 정확한 색이 필요하면 RGB로 내보내세요."),
    "problem.high_bit_depth": ("{bits}-bit picture, reduced to 8 bits per channel",
                               "{bits}비트 그림이라 채널당 8비트로 줄입니다."),
    "problem.mask_files": ("{n} mask file(s) in OneTrainer's naming (name-masklabel.png): not trained as pictures; "
                           "with masked training on (dataset.masked_loss) each one marks the part of its picture "
                           "that teaches",
                           "OneTrainer 방식의 마스크 파일(이름-masklabel.png) {n}개: 그림으로 학습하지 않습니다. 마스크 "
                           "학습(dataset.masked_loss)을 켜면 각 마스크가 그 그림에서 배울 부분을 정합니다."),
    "problem.no_mask": ("masked training is on, but it has no mask beside it (name-masklabel.png) and no "
                        "transparency: the whole picture trains",
                        "마스크 학습이 켜져 있지만 옆에 마스크(이름-masklabel.png)도 투명도도 없어 그림 전체로 학습합니다."),
    "problem.alpha_channel": ("has transparency; transparent areas are filled with white",
                              "투명한 부분이 있어 흰색으로 채웁니다."),
    "problem.exif_rotated": ("the camera marked it as rotated (EXIF orientation {orientation}); it is turned upright to {w}×{h}",
                             "카메라가 회전 표시(EXIF 방향 {orientation})를 남겨 똑바로 세웁니다({w}×{h})."),
    "problem.tag_weld": ('the tag "{tag}" is in {pct}% of captions: a tag in every caption gets welded to the trigger. Leave out of the captions the features the LoRA should absorb; keep in them what should stay changeable',
                         '"{tag}" 태그가 캡션의 {pct}%에 있습니다. 모든 캡션에 있는 태그는 트리거에 달라붙습니다. LoRA가 흡수할 특징은 캡션에서 빼고, 바뀔 수 있어야 할 것만 적으세요.'),
    # what an image with no usable caption trains with, inside problem.missing_caption and its kin
    "problem.fallback_caption": ('the caption "{caption}"', '"{caption}" 캡션으로'),
    "problem.fallback_empty": ("an empty caption", "빈 캡션으로"),
}  # fmt: skip
