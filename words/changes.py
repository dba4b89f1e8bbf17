"""A prescription's config change in words (``change.<op>``), and with a config the values it moves between."""

TEXTS = {
    "change.set": ("set {key} to {value}", "{key} 값을 바꿉니다: {value}"),
    "change.mul": ("multiply {key} by {value}", "{key} 값을 {value}배로 바꿉니다"),
    "change.min": ("cap {key} at {value}", "{key} 값을 {value} 이하로 제한합니다"),
    "change.max": ("raise {key} to at least {value}", "{key} 값을 {value} 이상으로 올립니다"),
    "change.preset": ("set {key} back to the preset's value", "{key} 값을 프리셋의 값으로 되돌립니다"),
    "change.from_to": ("{change} ({old} → {new})", "{change} ({old} → {new})"),
}
