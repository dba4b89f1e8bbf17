"""The knowledge base: symptoms → causes → prescriptions, loaded from ``trainer/doctor/knowledge/kb.toml``.

The KB is data so it can be read, translated and tested without code. It is validated on load: every id it
references exists, every text has English and Korean, and every prescription that is a config change names a
real config key and, applied to the default config, still validates. A broken KB is a :class:`KBError` naming
the entry, never a silent gap in the Troubleshoot page.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from trainer.config.schema import Config, from_dict
from trainer.doctor.knowledge import KB_PATH
from trainer.message import Msg, msg

LANGS = ("en", "ko")
GROUPS = ("numerics", "late_blur", "prompt_specific", "pictures", "strength", "data", "speed")
OPS = ("set", "mul", "min", "max", "preset")
INTENTS = ("raise", "lower")
VERDICTS = ("fit", "under", "over", "broken")  # trainer.doctor.verdict.LABELS
# Keys where 0 means "off": capping one at v must switch the feature on, not keep it off.
_ZERO_MEANS_OFF = {"optim.max_grad_norm"}
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class KBError(ValueError):
    """The shipped knowledge base is inconsistent (a developer's error, not a user's)."""


@dataclass(frozen=True, eq=False)
class Entry:
    id: str
    texts: dict[str, dict[str, str]]  # field → lang → text, e.g. texts["title"]["ko"]

    def text(self, field_name: str, lang: str = "en") -> str:
        return text(self, field_name, lang)


@dataclass(frozen=True, eq=False)
class Change:
    key: str
    op: str
    value: Any
    requires: tuple[str, ...] = ()  # capabilities the machine must have (bf16_supported); the caller checks
    intent: str | None = None  # raise | lower: which way the change means to move the setting (see :func:`intent`)


@dataclass(frozen=True, eq=False)
class Symptom(Entry):
    group: str = ""
    signals: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Cause(Entry):
    prescriptions: tuple[str, ...] = ()
    # config values without which this cause cannot happen (fp16 overflow needs train.precision = fp16)
    only_when: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    leans: tuple[str, ...] = ()  # the run verdicts this cause points to; empty: it points to none in particular

    def applies_to(self, cfg: Config) -> bool:
        return all(cfg.get(k) in allowed for k, allowed in self.only_when.items())


@dataclass(frozen=True, eq=False)
class Prescription(Entry):
    change: Change | None = None
    step: str | None = None  # the wizard step where the user acts on advice that is no setting (dataset, review)


@dataclass(frozen=True, eq=False)
class Checklist(Entry):
    symptom: str = ""
    items: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class StrengthRule(Entry):
    verdict: str = ""
    best_strength_range: tuple[float, float] = (0.0, 0.0)  # half-open: lo <= best < hi
    symptom: str | None = None
    prescriptions: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Note(Entry):
    """A signal, stage, sample-prompt kind, guide or principle: texts plus a few optional attributes."""

    key: str | None = None
    sequence: tuple[str, ...] = ()
    pick: bool = False


class RankedCause(NamedTuple):
    cause: Cause
    score: float
    evidence: tuple[tuple[str, str], ...]  # the (signal_id, symptom_id) pairs that contributed


# kind → (class, required text fields, allowed plain keys)
_KINDS: dict[str, tuple[type[Entry], tuple[str, ...], set[str]]] = {
    "signal": (Note, ("title",), set()),
    "symptom": (Symptom, ("title", "description"), {"group", "signals", "causes"}),
    "cause": (Cause, ("title", "explanation"), {"prescriptions", "only_when", "leans"}),
    "prescription": (Prescription, ("title", "detail"), {"change", "step"}),
    "checklist": (Checklist, ("title",), {"symptom", "items"}),
    "strength_rule": (StrengthRule, ("title", "detail"), {"verdict", "best_strength_range", "symptom", "prescriptions"}),
    "stage": (Note, ("title", "looks"), {"pick"}),
    "sample_prompt": (Note, ("title", "checks"), set()),
    "guide": (Note, ("title", "body"), {"key"}),
    "principle": (Note, ("title", "body"), {"sequence"}),
}  # fmt: skip
# (kind, attribute) → the kind its ids must name
_REFS = {
    ("symptom", "signals"): "signal", ("symptom", "causes"): "cause", ("cause", "prescriptions"): "prescription",
    ("checklist", "symptom"): "symptom", ("checklist", "items"): "prescription",
    ("strength_rule", "symptom"): "symptom", ("strength_rule", "prescriptions"): "prescription",
    ("principle", "sequence"): "prescription",
}  # fmt: skip


@dataclass(frozen=True, eq=False)
class KnowledgeBase:
    version: int
    tables: dict[str, dict[str, Any]]  # kind → {id: entry}, in file order (the tie-break order for causes)
    strength: Entry  # the strength sweep's texts
    strengths: tuple[float, ...]  # the strengths to try, e.g. 0.6, 0.8, 1.0, 1.2

    signals = property(lambda self: self.tables["signal"])
    symptoms = property(lambda self: self.tables["symptom"])
    causes = property(lambda self: self.tables["cause"])
    prescriptions = property(lambda self: self.tables["prescription"])
    checklists = property(lambda self: self.tables["checklist"])
    strength_rules = property(lambda self: self.tables["strength_rule"])
    stages = property(lambda self: self.tables["stage"])
    sample_prompts = property(lambda self: self.tables["sample_prompt"])
    guides = property(lambda self: self.tables["guide"])
    principles = property(lambda self: self.tables["principle"])

    def get(self, kind: str, entry_id: str) -> Any:
        try:
            return self.tables[kind][entry_id]
        except KeyError:
            raise KeyError(f"no {kind} with id {entry_id!r} in the knowledge base") from None

    def symptom(self, sid: str) -> Symptom:
        return self.get("symptom", sid)

    def cause(self, cid: str) -> Cause:
        return self.get("cause", cid)

    def prescription(self, pid: str) -> Prescription:
        return self.get("prescription", pid)

    def symptoms_for_signal(self, signal_id: str) -> list[Symptom]:
        return [s for s in self.symptoms.values() if signal_id in s.signals]

    def causes_for(self, symptom_id: str, config: Config | dict | None = None) -> list[Cause]:
        """A symptom's causes, most likely first, less those the config rules out."""
        cfg = None if config is None else _as_config(config)
        causes = [self.cause(c) for c in self.symptom(symptom_id).causes]
        return [c for c in causes if cfg is None or c.applies_to(cfg)]

    def prescriptions_for(self, cause_id: str) -> list[Prescription]:
        return [self.prescription(p) for p in self.cause(cause_id).prescriptions]

    def rank_causes(
        self, signals: dict[str, float], config: Config | dict | None = None
    ) -> list[RankedCause]:
        """Causes ranked by evidence. Each symptom matched by a signal adds its strength (the largest value among
        its signals) divided by the cause's 1-based position in that symptom's list; ties keep KB order. With a
        config, causes it rules out (fp16 overflow under bf16, EMA bugs with EMA off) are dropped."""
        cfg = None if config is None else _as_config(config)
        scores: dict[str, float] = {}
        evidence: dict[str, list[tuple[str, str]]] = {}
        for sym in self.symptoms.values():
            hits = [(s, float(signals[s])) for s in sym.signals if float(signals.get(s) or 0) > 0]
            if not hits:
                continue
            strength = max(v for _, v in hits)
            for pos, cid in enumerate(sym.causes, start=1):
                if cfg is None or self.cause(cid).applies_to(cfg):
                    scores[cid] = scores.get(cid, 0.0) + strength / pos
                    evidence.setdefault(cid, []).extend((s, sym.id) for s, _ in hits)
        order = {cid: i for i, cid in enumerate(self.causes)}
        ranked = sorted(scores, key=lambda cid: (-scores[cid], order[cid]))
        return [RankedCause(self.cause(c), scores[c], tuple(evidence[c])) for c in ranked]

    def strength_verdict(self, best_strength: float) -> StrengthRule:
        """The strength-sweep rule for the strength at which the LoRA looked best."""
        for rule in self.strength_rules.values():
            lo, hi = rule.best_strength_range
            if lo <= best_strength < hi:
                return rule
        raise KeyError(f"no strength rule covers a best strength of {best_strength}")


def text(obj: Entry, field_name: str, lang: str = "en") -> str:
    """``obj``'s ``field_name`` text in ``lang`` (English for a language the KB does not have)."""
    texts = obj.texts.get(field_name)
    if texts is None:
        raise KeyError(f"{type(obj).__name__} {obj.id!r} has no text {field_name!r}")
    return texts.get(lang) or texts["en"]


@functools.lru_cache(maxsize=4)
def load_kb(path: str | Path | None = None) -> KnowledgeBase:
    """Read and validate the knowledge base (cached; the shipped file unless ``path`` is given)."""
    p = Path(path) if path else KB_PATH
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise KBError(f"cannot read the knowledge base {p}: {e}") from None
    return parse_kb(data)


def apply_change(config: Config | dict, change: Change | Prescription | dict) -> Config:
    """A new, validated Config with exactly one change applied (a UserError if the result is out of range).
    A change to ``train.epochs`` goes to ``train.max_steps`` when that is set, since it then decides the length."""
    cfg, ch = _as_config(config), _as_change(change)
    key = _effective_key(cfg, ch.key)
    data = cfg.to_dict()
    preset = data.pop("preset", "")  # already folded into the values; don't re-apply it
    *sections, leaf = key.split(".")
    node = data
    for s in sections:
        node = node[s]
    node[leaf] = _preset_value(cfg, key) if ch.op == "preset" else _new_value(key, cfg.get(key), ch)
    out = from_dict(data, origin=f"the change to {key}")
    out.preset = preset
    return out


def describe_change(change: Change | Prescription | dict, config: Config | dict | None = None) -> Msg:
    """What the change does (``change.<op>``); with a config, also the value it moves from and to."""
    ch = _as_change(change)
    cfg = None if config is None else _as_config(config)
    key = ch.key if cfg is None else _effective_key(cfg, ch.key)
    line = Msg(f"change.{ch.op}", {"key": key, "value": _fmt(ch.value)})
    if cfg is not None:
        return msg("change.from_to", change=line, old=_fmt(cfg.get(key)), new=_fmt(apply_change(cfg, ch).get(key)))
    return line


def intent(change: Change | Prescription | dict) -> str | None:
    """Which way a change means to move its setting: declared for a "set" of a number, else from the op (mul by
    more or less than 1, max raises, min lowers); None for a switch, a name, or back to the preset."""
    ch = _as_change(change)
    if ch.intent is not None:
        return ch.intent
    if ch.op == "mul" and isinstance(ch.value, int | float) and ch.value != 1:
        return "raise" if ch.value > 1 else "lower"
    return {"max": "raise", "min": "lower"}.get(ch.op)


def moves_as_meant(config: Config | dict, change: Change | Prescription | dict) -> bool:
    """Whether the change, applied to this config, moves the setting the way it means to. "Put LoRA on the
    convolutions" (conv_rank set to 8) to strengthen a run whose conv_rank is 16 would lower it: not offered.
    A change that moves nothing is "as meant" here; callers refuse it as a no-op."""
    cfg, ch = _as_config(config), _as_change(change)
    way = intent(ch)
    if way is None:
        return True
    key = _effective_key(cfg, ch.key)
    old, new = cfg.get(key), apply_change(cfg, ch).get(key)
    if key in _ZERO_MEANS_OFF:  # 0 is "off", i.e. no limit at all
        old, new = (math.inf if v == 0 else v for v in (old, new))
    return new == old or (new > old if way == "raise" else new < old)


# ---------------------------------------------------------------------------------------------- helpers


def _preset_value(cfg: Config, key: str) -> Any:
    """``key`` as the run's preset sets it (the defaults' value for a run without a preset)."""
    from trainer.config.presets import preset_config
    from trainer.errors import UserError

    if not cfg.preset:
        return Config().get(key)
    try:
        return preset_config(cfg.preset).get(key)
    except (UserError, OSError, ValueError) as e:
        raise UserError(f"the preset {cfg.preset!r} cannot be read for its {key}: {e}") from None


def _as_config(config: Config | dict) -> Config:
    return config if isinstance(config, Config) else from_dict(dict(config))


def _as_change(change: Change | Prescription | dict) -> Change:
    if isinstance(change, Prescription):
        if change.change is None:
            raise ValueError(f"prescription {change.id!r} is not a config change")
        return change.change
    if isinstance(change, dict):
        return Change(change["key"], change["op"], change.get("value"), tuple(change.get("requires", ())),
                      change.get("intent"))
    return change


def _effective_key(cfg: Config, key: str) -> str:
    return "train.max_steps" if key == "train.epochs" and cfg.train.max_steps > 0 else key


def _new_value(key: str, current: Any, ch: Change) -> Any:
    if ch.op == "set":
        return ch.value
    if ch.op not in OPS or isinstance(current, bool) or not isinstance(current, int | float):
        raise ValueError(f"{key} = {current!r}: op {ch.op!r} needs a numeric setting and one of {OPS}")
    if ch.op == "mul":
        new = current * ch.value
    elif ch.op == "min":
        new = ch.value if current == 0 and key in _ZERO_MEANS_OFF else min(current, ch.value)
    else:
        new = max(current, ch.value)
    if isinstance(current, int):  # counts stay whole, and a count of 1 or more never rounds down to 0
        new = max(1, round(new)) if current >= 1 else round(new)
    return new


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _is_config_key(key: str) -> bool:
    try:
        return not isinstance(Config().get(key), BaseModel)
    except AttributeError:
        return False


def _split(where: str, raw: dict, text_fields: tuple[str, ...], plain: set[str]) -> tuple[dict, dict]:
    """Separate ``<field>_en`` / ``<field>_ko`` texts from plain keys; both languages must be there."""
    texts: dict[str, dict[str, str]] = {}
    for k, v in raw.items():
        base, _, lang = k.rpartition("_")
        if lang in LANGS and base:
            if not isinstance(v, str) or not v.strip():
                raise KBError(f"{where}: {k} must be a non-empty string")
            if lang == "ko" and not _HANGUL.search(v):
                raise KBError(f"{where}: {k} has no Korean (Hangul) in it")
            texts.setdefault(base, {})[lang] = v
        elif k != "id" and k not in plain:
            raise KBError(f"{where}: unknown key {k!r}; allowed: {sorted(plain)}")
    for f in sorted(set(text_fields) | set(texts)):
        missing = [f"{f}_{lang}" for lang in LANGS if lang not in texts.get(f, {})]
        if missing:
            raise KBError(f"{where}: missing {', '.join(missing)}")
    return texts, {k: (tuple(v) if isinstance(v, list) else v) for k, v in raw.items() if k in plain}


def _entry(kind: str, raw: dict[str, Any]) -> Entry:
    cls, text_fields, plain = _KINDS[kind]
    eid = raw.get("id")
    where = f"[[{kind}]] {eid!r}"
    if not isinstance(eid, str) or not _ID.match(eid):
        raise KBError(f"{where}: needs an id of letters, digits and underscores")
    texts, attrs = _split(where, raw, text_fields, plain)
    if "only_when" in attrs:
        attrs["only_when"] = {k: tuple(v) for k, v in attrs["only_when"].items()}
    if "change" in attrs:
        c = attrs["change"]
        needed = {"key", "op"} if c.get("op") == "preset" else {"key", "op", "value"}
        if not needed <= set(c) <= {"key", "op", "value", "requires", "intent"} or c["op"] not in OPS:
            raise KBError(f"{where}: change needs key, op (one of {OPS}) and value (none for preset), optionally "
                          f"requires and intent, nothing else; got {c}")
        numeric_set = c["op"] == "set" and isinstance(c["value"], int | float) and not isinstance(c["value"], bool)
        if c.get("intent") not in (*INTENTS, None) or (numeric_set and "intent" not in c):
            raise KBError(f"{where}: a change that sets a number needs intent = one of {INTENTS}; got {c}")
        attrs["change"] = Change(c["key"], c["op"], c.get("value"), tuple(c.get("requires", ())), c.get("intent"))
    if "leans" in attrs and not set(attrs["leans"]) <= set(VERDICTS):
        raise KBError(f"{where}: leans must name verdicts among {VERDICTS}; got {attrs['leans']}")
    if "step" in attrs and attrs["step"] not in ("dataset", "review"):
        raise KBError(f"{where}: step must be dataset or review; got {attrs['step']!r}")
    return cls(id=eid, texts=texts, **attrs)


def parse_kb(data: dict[str, Any]) -> KnowledgeBase:
    """Build and validate a KnowledgeBase from parsed TOML (public so tests can feed it broken data)."""
    tables: dict[str, dict[str, Any]] = {}
    for kind in _KINDS:
        tables[kind] = {}
        for raw in data.get(kind, []):
            e = _entry(kind, raw)
            if e.id in tables[kind]:
                raise KBError(f"[[{kind}]] {e.id!r} is defined twice")
            tables[kind][e.id] = e
    texts, attrs = _split("[strength]", data.get("strength", {}), ("title", "detail"), {"strengths"})
    kb = KnowledgeBase(int(data.get("version", 0)), tables, Entry("strength", texts),
                       tuple(float(x) for x in attrs.get("strengths", ())))  # fmt: skip
    _validate(kb)
    return kb


def _validate(kb: KnowledgeBase) -> None:
    for (kind, attr), target in _REFS.items():
        for e in kb.tables[kind].values():
            ids = getattr(e, attr)
            for i in [ids] if isinstance(ids, str) else ids or ():
                if i not in kb.tables[target]:
                    raise KBError(f"[[{kind}]] {e.id!r}: {attr} names an unknown {target} {i!r}")
    for e in [*kb.symptoms.values(), *kb.causes.values()]:
        if not (e.causes if isinstance(e, Symptom) else e.prescriptions):
            raise KBError(f"{type(e).__name__} {e.id!r} leads nowhere: it lists no causes/prescriptions")
    for s in kb.symptoms.values():
        if s.group not in GROUPS:
            raise KBError(f"[[symptom]] {s.id!r}: group {s.group!r} is not one of {GROUPS}")
    keys = [(f"[[cause]] {c.id!r}: only_when", k) for c in kb.causes.values() for k in c.only_when]
    keys += [(f"[[guide]] {g.id!r}: key", g.key) for g in kb.guides.values() if g.key]
    keys += [
        (f"[[prescription]] {p.id!r}: change", p.change.key) for p in kb.prescriptions.values() if p.change
    ]
    for where, key in keys:
        if not _is_config_key(key):
            raise KBError(f"{where} names {key!r}, which is not a config key")
    spans = sorted(r.best_strength_range for r in kb.strength_rules.values())
    for (lo, hi), nxt in zip(spans, [*spans[1:], None]):
        if not lo < hi or (nxt is not None and nxt[0] < hi):
            raise KBError(f"[[strength_rule]] best_strength_range {[lo, hi]} is empty or overlaps another")
    default = Config()
    for p in kb.prescriptions.values():
        if p.change is not None:
            try:
                apply_change(default, p.change)
            except Exception as e:
                raise KBError(f"[[prescription]] {p.id!r}: change fails on the default config: {e}") from e
