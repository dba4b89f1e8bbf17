"""The knowledge base: symptoms → causes → prescriptions, loaded from ``trainer/doctor/knowledge/kb.toml``.

The KB is data so it can be read, translated and tested without code. It is validated on load: every id it
references exists, every text has English and Korean, and every prescription that is a config change names a
real config key and, applied to the default config, still validates. A broken KB is a :class:`KBError` naming
the entry, never a silent gap in the Troubleshoot page.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, cast, get_args

from pydantic import AfterValidator, BaseModel, Field, ValidationError, model_validator

from trainer.config.schema import Config
from trainer.doctor.changes import Change, FrozenModel, as_config
from trainer.doctor.changes import apply_change as apply_change  # the callers' names, from before the split
from trainer.doctor.changes import describe_change as describe_change
from trainer.doctor.changes import moves_as_meant as moves_as_meant
from trainer.doctor.knowledge import KB_PATH

LANGS = ("en", "ko")
Group = Literal["numerics", "late_blur", "prompt_specific", "pictures", "strength", "data", "speed"]
VerdictLabel = Literal["fit", "under", "over", "broken"]
GROUPS: tuple[str, ...] = get_args(Group)
VERDICTS: tuple[str, ...] = get_args(VerdictLabel)  # trainer.doctor.verdict.LABELS but "none" (nothing to lean to)
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _plain_id(v: str) -> str:
    if not _ID.match(v):
        raise ValueError("needs an id of letters, digits and underscores")
    return v


class KBError(ValueError):
    """The shipped knowledge base is inconsistent (a developer's error, not a user's)."""


class Entry(FrozenModel):
    """An entry of one kind: its id and its texts (``<field>_en`` / ``<field>_ko`` in the TOML)."""

    TEXTS: ClassVar[tuple[str, ...]] = ("title",)
    id: Annotated[str, AfterValidator(_plain_id)]
    texts: dict[str, dict[str, str]]  # field → lang → text, e.g. texts["title"]["ko"]

    @model_validator(mode="before")
    @classmethod
    def _gather_texts(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or "texts" in raw:
            return raw
        texts: dict[str, dict[str, str]] = {}
        rest = {}
        for k, v in raw.items():
            base, _, lang = k.rpartition("_")
            if lang not in LANGS or not base:
                rest[k] = v
            elif not isinstance(v, str) or not v.strip():
                raise ValueError(f"{k} must be a non-empty string")
            elif lang == "ko" and not _HANGUL.search(v):
                raise ValueError(f"{k} has no Korean (Hangul) in it")
            else:
                texts.setdefault(base, {})[lang] = v
        missing = [f"{f}_{lang}" for f in sorted({*cls.TEXTS, *texts}) for lang in LANGS if lang not in texts.get(f, {})]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        return {**rest, "texts": texts}

    def text(self, field_name: str, lang: str = "en") -> str:
        return text(self, field_name, lang)


class Signal(Entry):
    pass


class Symptom(Entry):
    TEXTS = ("title", "description")
    group: Group
    signals: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()


class Cause(Entry):
    TEXTS = ("title", "explanation")
    prescriptions: tuple[str, ...] = ()
    # config values without which this cause cannot happen (fp16 overflow needs train.precision = fp16)
    only_when: dict[str, tuple[Any, ...]] = Field(default_factory=dict)
    leans: tuple[VerdictLabel, ...] = ()  # the run verdicts this cause points to; empty: none in particular

    def applies_to(self, cfg: Config) -> bool:
        return all(cfg.get(k) in allowed for k, allowed in self.only_when.items())


class Prescription(Entry):
    TEXTS = ("title", "detail")
    change: Change | None = None
    step: Literal["dataset", "review"] | None = None  # where the user acts on advice that is no setting
    unless_set: str | None = None  # a config key (section.name): advice that does not apply once it is set


class Checklist(Entry):
    symptom: str = ""
    items: tuple[str, ...] = ()


class StrengthRule(Entry):
    TEXTS = ("title", "detail")
    verdict: str = ""
    best_strength_range: tuple[float, float] = (0.0, 0.0)  # half-open: lo <= best < hi
    symptom: str | None = None
    prescriptions: tuple[str, ...] = ()


class Stage(Entry):
    TEXTS = ("title", "looks")
    pick: bool = False


class SamplePrompt(Entry):
    TEXTS = ("title", "checks")


class Guide(Entry):
    TEXTS = ("title", "body")
    key: str | None = None


class Principle(Entry):
    TEXTS = ("title", "body")
    sequence: tuple[str, ...] = ()


class Strength(Entry):
    """The strength sweep's texts (the ``[strength]`` table) and the strengths to try."""

    TEXTS = ("title", "detail")
    id: str = "strength"
    strengths: tuple[float, ...] = ()


class RankedCause(NamedTuple):
    cause: Cause
    score: float
    evidence: tuple[tuple[str, str], ...]  # the (signal_id, symptom_id) pairs that contributed


_KINDS: dict[str, type[Entry]] = {
    "signal": Signal, "symptom": Symptom, "cause": Cause, "prescription": Prescription, "checklist": Checklist,
    "strength_rule": StrengthRule, "stage": Stage, "sample_prompt": SamplePrompt, "guide": Guide,
    "principle": Principle,
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
        cfg = None if config is None else as_config(config)
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
        cfg = None if config is None else as_config(config)
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


# ---------------------------------------------------------------------------------------------- helpers


def _is_config_key(key: str) -> bool:
    try:
        return not isinstance(Config().get(key), BaseModel)
    except AttributeError:
        return False


def _entry(where: str, cls: type[Entry], raw: Any) -> Entry:
    """``raw`` validated as ``cls``; a :class:`KBError` naming the entry and each key that is wrong."""
    try:
        return cls.model_validate(raw)
    except ValidationError as err:
        parts = []
        for e in err.errors():
            loc, msg = ".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, ")
            if e["type"] == "extra_forbidden":
                parts.append(f"unknown key {loc!r}; allowed: {sorted(set(cls.model_fields) - {'id', 'texts'})}")
            elif e["type"] == "missing":
                parts.append(f"missing {loc}")
            elif e["type"] == "value_error":  # our own checks: the message says what is wrong
                parts.append(f"{loc}: {msg}" if loc else msg)
            else:
                parts.append(f"{loc} {e['input']!r}: {msg}")
        raise KBError(f"{where}: {'; '.join(parts)}") from None


def parse_kb(data: dict[str, Any]) -> KnowledgeBase:
    """Build and validate a KnowledgeBase from parsed TOML (public so tests can feed it broken data)."""
    tables: dict[str, dict[str, Any]] = {}
    for kind, cls in _KINDS.items():
        tables[kind] = {}
        for raw in data.get(kind, []):
            eid = raw.get("id") if isinstance(raw, dict) else None
            e = _entry(f"[[{kind}]] {eid!r}", cls, raw)
            if e.id in tables[kind]:
                raise KBError(f"[[{kind}]] {e.id!r} is defined twice")
            tables[kind][e.id] = e
    strength = cast(Strength, _entry("[strength]", Strength, data.get("strength", {})))
    kb = KnowledgeBase(int(data.get("version", 0)), tables, strength, strength.strengths)
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
