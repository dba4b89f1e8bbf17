"""Sample prompts: what each prompt kind is called where people read it (``kind.<kind>``)."""

TEXTS = {
    "kind.trigger": ("trigger only", "트리거만"),
    "kind.trigger_unseen": ("trigger + unseen pose/background", "트리거 + 새 자세/배경"),
    "kind.trigger_outfit": ("trigger + other outfit", "트리거 + 다른 옷"),
    "kind.no_trigger": ("no trigger", "트리거 없음"),
    "kind.numbered": ("{kind} #{index}", "{kind} #{index}"),  # two prompts of one kind
    "kind.unknown": ("{kind}", "{kind}"),  # a kind this version has no words for keeps its id
}
