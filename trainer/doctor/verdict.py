"""One judgement per run and per checkpoint: fit, under, over or broken, with the evidence that decided it.

Plan, Review, Troubleshoot and the guard's alert all read it from here, so they cannot disagree. The seeds'
rule is "judge by pictures, not by the loss", so the evidence is weighed by how much it can be trusted:

- **strong**: the guard's non-finite alert (the run broke), and on the demo character the measures of what
  the pictures show (likeness, adherence to the prompt, whether no-trigger pictures still show the world);
- **moderate**: the dose ``lr × steps × alpha/rank`` against the preset's zone (a rule of thumb), and for any
  other run the pixel measures of the pictures (leakage, burn against step 0);
- **weak**: burn on the demo character (its own saturated magenta and yellow raise it against the base's
  pictures: README, "Demo status") and trends of the numbers (loss, weight norm, gradient spikes).

The strongest tier that says anything decides; within a tier, broken > over > under > fit. A weak score never
decides while anything stronger speaks: it is listed as a weak observation, not shown as the verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainer.config.choices import optimizer_spec
from trainer.config.schema import Config
from trainer.io import read_jsonl
from trainer.run.rundir import RunPaths

LABELS = ("fit", "under", "over", "broken")
STRENGTHS = ("strong", "moderate", "weak")
# how much a score of each strength counts when checkpoints are compared (likeness + adherence - leakage - burn)
STRENGTH_WEIGHT = {"strong": 1.0, "moderate": 0.6, "weak": 0.25}
LIKENESS_SHOWS = 0.5  # demo: at this likeness the character is there (stripes, eyes, hat), see measures.likeness
# On the demo character the pictures are read for what they show; the pixel scores the detectors compute for any
# run (burn, pixel leakage) move with its own saturated colours and with any weight change on a model this small.
DEMO_WEAK_SIGNALS = ("sample_burn", "leakage")

LABEL_TEXT = {
    "fit": {"en": "fit", "ko": "알맞음"},
    "under": {"en": "under-trained", "ko": "미적합(덜 학습됨)"},
    "over": {"en": "over-trained", "ko": "과적합(과하게 학습됨)"},
    "broken": {"en": "broken (nan/inf)", "ko": "망가짐(nan/inf)"},
}
OUTWEIGHED = {"en": "outweighed: ", "ko": "더 강한 근거에 밀림: "}
STRENGTH_TEXT = {
    "strong": {"en": "strong evidence", "ko": "강한 근거"},
    "moderate": {"en": "moderate evidence", "ko": "보통 근거"},
    "weak": {"en": "weak evidence", "ko": "약한 근거"},
}


def _t(en: str, ko: str) -> dict[str, str]:
    return {"en": en, "ko": ko}


@dataclass(frozen=True)
class Observation:
    """One piece of evidence: what was seen, which verdict it points to (None: no direction), how far to trust it."""

    source: str  # guard | pictures | dose | numbers
    points_to: str | None  # one of LABELS, or None
    strength: str  # one of STRENGTHS
    text: dict[str, str]
    signal: str | None = None  # the knowledge-base signal it is, when it is one (the diagnosis ranks causes by it)

    def line(self, outweighed: bool = False) -> dict[str, str]:
        """The observation for people, with its strength in words; ``outweighed`` when the verdict went the other way."""
        lead = OUTWEIGHED if outweighed else {"en": "", "ko": ""}
        return {lang: f"{lead[lang]}{self.text[lang]} ({STRENGTH_TEXT[self.strength][lang]})" for lang in ("en", "ko")}


@dataclass(frozen=True)
class CheckpointVerdict:
    """One saved checkpoint's verdict: ``evidence`` lines (deciding first, the outweighed after), the dose it had
    reached, the picture measures of its samples (:func:`trainer.review.grid.measure_steps`)."""

    step: int
    label: str
    evidence: list[dict[str, str]]
    dose: float | None = None
    measures: dict[str, Any] = field(default_factory=dict)
    observations: tuple[Observation, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """``label`` ∈ LABELS; ``evidence``: {"en", "ko"} lines, the deciding ones first; ``recommended_step``: the
    checkpoint to use (None when there is none worth using); ``summary``: one sentence with what to do."""

    label: str
    evidence: list[dict[str, str]]
    recommended_step: int | None
    summary: dict[str, str]
    observations: tuple[Observation, ...] = ()
    checkpoints: tuple[CheckpointVerdict, ...] = ()
    forecast: bool = False  # from the plan's dose alone, before any training
    weak_signals: tuple[str, ...] = ()  # detector signals that are weak evidence on this run's model

    def signals(self) -> dict[str, float]:
        """The knowledge-base signals the deciding evidence is, weighted by its strength (for the diagnosis)."""
        out: dict[str, float] = {}
        for o in self.observations:
            if o.signal and o.points_to == self.label:
                out[o.signal] = max(out.get(o.signal, 0.0), STRENGTH_WEIGHT[o.strength])
        return out

    def title(self, lang: str) -> str:
        return LABEL_TEXT[self.label][lang]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["title"] = dict(LABEL_TEXT[self.label])
        return out


def decide(observations: list[Observation] | tuple[Observation, ...]) -> str:
    """The label the strongest tier of evidence gives; within a tier broken > over > under > fit."""
    for tier in STRENGTHS:
        said = {o.points_to for o in observations if o.strength == tier and o.points_to in LABELS}
        for label in ("broken", "over", "under", "fit"):
            if label in said:
                return label
    return "fit"


# ------------------------------------------------------------------------------------------------- plan


def dose_zone(dose: float, low: float, high: float) -> str:
    return "under" if dose < low else "over" if dose > high else "fit"


def _dose_observation(dose: float, low: float, high: float, strength: str, where: dict[str, str]) -> Observation:
    zone = dose_zone(dose, low, high)
    side = {"under": _t("under", "아래"), "fit": _t("inside", "안"), "over": _t("over", "위")}[zone]
    signal = {"under": "dose_under", "over": "dose_over"}.get(zone)
    return Observation("dose", zone, strength, _t(
        f"{where['en']} dose {dose:.3g} is {side['en']} this preset's zone {low:g}–{high:g}",
        f"{where['ko']} 학습량 {dose:.3g}은(는) 이 프리셋의 범위 {low:g}–{high:g} {side['ko']}입니다"), signal)


def plan_verdict(plan: Any) -> Verdict:
    """The verdict the dose forecasts before training (a :class:`~trainer.plan.steps.Plan` or its ``plan.json``): the
    same words the run's verdict uses, from the dose zone alone."""
    get: Callable[..., Any] = plan.get if isinstance(plan, dict) else lambda k, d=None: getattr(plan, k, d)
    dose, low, high = float(get("dose")), float(get("dose_low")), float(get("dose_high"))
    strength = "weak" if get("dose_note") else "moderate"  # prodigy: the lr is a multiplier
    obs = _dose_observation(dose, low, high, strength, _t("the plan's", "계획의"))
    label = obs.points_to or "fit"
    advice = {
        "fit": _t("the pictures of the run will tell; Review judges each checkpoint by them",
                  "실제 판단은 학습 뒤 그림으로 합니다. 리뷰 단계가 체크포인트마다 그림으로 판단합니다"),
        "under": _t("expect a weak likeness: raise the steps or the learning rate (one of the two)",
                    "덜 닮을 수 있습니다. 스텝이나 학습률 중 하나를 올리세요"),
        "over": _t("expect memorised pictures that ignore the prompt: lower the learning rate, steps or alpha",
                   "그림을 외워 프롬프트를 무시할 수 있습니다. 학습률, 스텝이나 alpha를 낮추세요"),
    }[label]
    summary = _t(f"From the dose alone: {advice['en']}.", f"학습량만으로 본 예상입니다. {advice['ko']}.")
    return Verdict(label, [obs.line()], None, summary, (obs,), forecast=True)


# -------------------------------------------------------------------------------------------- checkpoints


def _checkpoint_steps(run_dir: Path) -> list[int]:
    from trainer.run.contents import checkpoint_files

    files = checkpoint_files(run_dir)
    steps = sorted({c["step"] for c in files if c["weights"] == "live" and not c["final"]})
    if not steps:
        steps = sorted({c["step"] for c in files if c["weights"] == "live"})
    return steps


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _picture_observations(row: dict[str, Any], demo: bool, best_adherence: float | None) -> list[Observation]:
    from trainer.doctor.pictures import ADHERENCE_SLACK, BURN_LIMIT, LEAKAGE_LIMIT

    obs = []
    like, adh, leak, burn = row.get("likeness"), row.get("adherence"), row.get("leakage"), row.get("burn")
    if demo and like is not None:
        if like < LIKENESS_SHOWS:
            obs.append(Observation("pictures", "under", "strong", _t(
                f"the character does not show yet: likeness {like:.2f} (it shows from {LIKENESS_SHOWS:g})",
                f"캐릭터가 아직 나오지 않음: 닮음 {like:.2f} ({LIKENESS_SHOWS:g}부터 닮음)"), "low_likeness"))
        else:
            obs.append(Observation("pictures", "fit", "strong", _t(
                f"the character shows: likeness {like:.2f}", f"캐릭터가 나옴: 닮음 {like:.2f}")))
    # a save that has not learned the character follows the prompt no better: adherence drops mean overfitting
    # only once the character is there (the seeds' "more alike, but poses drift to the data's")
    shows = like is None or like >= LIKENESS_SHOWS
    if demo and shows and adh is not None and best_adherence is not None and adh < best_adherence - ADHERENCE_SLACK:
        obs.append(Observation("pictures", "over", "strong", _t(
            f"the prompt starts to be ignored: adherence {adh:.2f} against the run's best {best_adherence:.2f}",
            f"프롬프트를 무시하기 시작함: 프롬프트 준수 {adh:.2f} (이 실행의 최고 {best_adherence:.2f})"), "low_adherence"))
    if leak is not None:
        strength = "strong" if demo else "moderate"  # the demo reads what a picture shows; others count pixels
        if leak > LEAKAGE_LIMIT:
            obs.append(Observation("pictures", "over", strength, _t(
                f"no-trigger pictures drift from the base model's: leakage {leak:.2f} (limit {LEAKAGE_LIMIT:g})",
                f"트리거 없는 그림이 기반 모델의 그림에서 멀어짐: 누출 {leak:.2f} (한도 {LEAKAGE_LIMIT:g})"), "leakage"))
        elif demo:
            obs.append(Observation("pictures", "fit", "moderate", _t(
                f"no-trigger pictures stay the base model's: leakage {leak:.2f}",
                f"트리거 없는 그림은 기반 모델의 그림 그대로: 누출 {leak:.2f}")))
    if burn is not None and burn > BURN_LIMIT:
        if demo:
            obs.append(Observation("pictures", "over", "weak", _t(
                f"burn {burn:.2f} against step 0 — weak on the demo: the character's own saturated colours raise it",
                f"0스텝 대비 색 탐 {burn:.2f} — 데모에서는 약한 신호: 캐릭터 자체의 진한 색이 이 값을 올림"), "sample_burn"))
        else:
            obs.append(Observation("pictures", "over", "moderate", _t(
                f"trigger pictures look burnt against step 0: burn {burn:.2f} (limit {BURN_LIMIT:g})",
                f"트리거 그림이 0스텝보다 탐: 색 탐 {burn:.2f} (한도 {BURN_LIMIT:g})"), "sample_burn"))
    return obs


def checkpoint_verdicts(run_dir: str | Path, config: Config | None = None) -> list[CheckpointVerdict]:
    """A verdict for every saved checkpoint (live weights; the final save when there is no other), oldest first."""
    from trainer.doctor.pictures import dose_by_step, measure_steps
    from trainer.run.contents import load_run_config

    run_dir = Path(run_dir)
    config = config or load_run_config(run_dir)
    steps = _checkpoint_steps(run_dir)
    if not steps:
        return []
    measured = {r["step"]: r for r in measure_steps(run_dir)}
    doses = dose_by_step(run_dir, config)
    demo = any(r.get("likeness") is not None for r in measured.values())
    # an optimizer that sets its own step size (a dose note) makes the lr a multiplier: the dose is not comparable
    dose_strength = "weak" if optimizer_spec(config.optim.optimizer).dose_note else "moderate"
    out = []
    best_adh: float | None = None  # the best adherence up to this save: overfitting is a fall from an earlier peak
    for step in steps:
        obs: list[Observation] = []
        row = measured.get(step)
        if row is not None:
            adh, like = row.get("adherence"), row.get("likeness")
            if adh is not None and (like is None or like >= LIKENESS_SHOWS):
                best_adh = adh if best_adh is None else max(best_adh, adh)
            obs += _picture_observations(row, demo, best_adh)
        dose = doses.get(step)
        if dose is not None:
            obs.append(_dose_observation(dose, config.dose.fit_low, config.dose.fit_high, dose_strength,
                                         _t(f"step {step}'s", f"{step}스텝의")))
        label = decide(obs)
        lines = [o.line() for o in obs if o.points_to == label]
        lines += [o.line(outweighed=o.points_to is not None) for o in obs if o.points_to != label]
        out.append(CheckpointVerdict(step, label, lines, dose, dict(row or {}), tuple(obs)))
    return out


def _score(c: CheckpointVerdict) -> float:
    """likeness + adherence − leakage − burn on the demo character, burn weighted as the weak score it is there."""
    m = c.measures
    return ((m.get("likeness") or 0.0) + (m.get("adherence") or 0.0) - (m.get("leakage") or 0.0)
            - STRENGTH_WEIGHT["weak"] * (m.get("burn") or 0.0))


def _recommend(cvs: list[CheckpointVerdict], config: Config) -> int | None:
    if not cvs:
        return None
    fits = [c for c in cvs if c.label == "fit"]
    if fits:
        if any(c.measures.get("likeness") is not None for c in fits):
            return max(fits, key=lambda c: (_score(c), -c.step)).step
        middle = math.sqrt(config.dose.fit_low * config.dose.fit_high)
        return min(fits, key=lambda c: (abs(math.log(max(c.dose or 1e-12, 1e-12) / middle)), -c.step)).step
    first_over = next((i for i, c in enumerate(cvs) if c.label == "over"), None)
    if first_over is None:
        return cvs[-1].step  # all under: the furthest along
    return cvs[first_over - 1].step if first_over > 0 else cvs[0].step  # the least pushed


# ------------------------------------------------------------------------------------------------- run


_NUMBER_SIGNALS = {  # detector findings on the numbers: which way they point, and how far to trust them
    "learning_stalled": ("under", "moderate"),
    "weight_norm_growth": ("over", "weak"),
    "loss_trending_up": ("over", "weak"),
    "grad_spike": ("over", "weak"),
    "clip_saturated": ("over", "weak"),
}
WEAK_NUMBER_SIGNALS = tuple(s for s, (_, strength) in _NUMBER_SIGNALS.items() if strength == "weak")


def _finding_observations(findings: list[Any]) -> list[Observation]:
    out = []
    for f in findings:
        signal = f.signal if hasattr(f, "signal") else f.get("signal")
        message = f.message if hasattr(f, "message") else f.get("message")
        if signal.startswith("nonfinite_"):
            out.append(Observation("guard", "broken", "strong", dict(message)))
        elif signal in _NUMBER_SIGNALS:
            points_to, strength = _NUMBER_SIGNALS[signal]
            out.append(Observation("numbers", points_to, strength, dict(message)))
    return out


def run_findings(run_dir: Path, config: Config) -> list[Any]:
    """The detectors' findings on the run's events and numbers (the pictures are read by :func:`checkpoint_verdicts`)."""
    from trainer.doctor.detectors import metric_findings, nonfinite_findings

    paths = RunPaths(run_dir)
    plan = json.loads(paths.plan.read_text(encoding="utf-8")) if paths.plan.is_file() else {}
    findings = nonfinite_findings(read_jsonl(paths.events))
    return findings + (metric_findings(read_jsonl(paths.metrics), plan, config) if plan else [])


def run_verdict(run_dir: str | Path, findings: list[Any] | None = None) -> Verdict:
    """The run's verdict: broken when the guard saw a non-finite value; else from its checkpoints (fit when one
    fits, with the one to use; under when all are under; else over); a run without checkpoints is judged on the
    dose it reached and its numbers. ``findings`` (the detectors', e.g. from ``diagnose``) saves reading them twice."""
    from trainer.doctor.pictures import dose_by_step
    from trainer.run.contents import load_run_config

    run_dir = Path(run_dir)
    config = load_run_config(run_dir)
    findings = run_findings(run_dir, config) if findings is None else findings
    run_obs = _finding_observations(findings)
    cvs = checkpoint_verdicts(run_dir, config)
    recommended = _recommend(cvs, config)
    broken = [o for o in run_obs if o.points_to == "broken"]
    if broken:
        label = "broken"
    elif cvs:
        labels = {c.label for c in cvs}
        label = "fit" if "fit" in labels else "under" if labels == {"under"} else "over"
    else:
        doses = dose_by_step(run_dir, config)
        if doses:
            last = max(doses)
            run_obs.append(_dose_observation(doses[last], config.dose.fit_low, config.dose.fit_high, "moderate",
                                             _t(f"the dose reached at step {last}:", f"{last}스텝까지의")))
        label = decide(run_obs)
    by_step = {c.step: c for c in cvs}
    rec = by_step.get(recommended) if recommended is not None else None
    lines: list[dict[str, str]] = [o.line() for o in broken]
    if rec is not None:
        lines += [{lang: f"{_step_word(rec.step, lang)}: {e[lang]}" for lang in ("en", "ko")} for e in rec.evidence]
    others = [c for c in cvs if c.step != recommended and c.label != label]
    for c in others:
        lines.append(_t(f"step {c.step}: {LABEL_TEXT[c.label]['en']} — {c.evidence[0]['en']}",
                        f"{c.step}스텝: {LABEL_TEXT[c.label]['ko']} — {c.evidence[0]['ko']}"))
    lines += [o.line(outweighed=o.points_to not in (None, label)) for o in run_obs if o.points_to != "broken"]
    demo = any(c.measures.get("likeness") is not None for c in cvs)
    # where the pictures were measured, the trends of the numbers are weak beside them (the seeds: judge by
    # pictures, not by the loss); on the demo so are the pixel scores
    weak = (DEMO_WEAK_SIGNALS if demo else ()) + (WEAK_NUMBER_SIGNALS if any(c.measures for c in cvs) else ())
    deciding = next((c for c in cvs if c.label == label), rec)  # the first save that shows the run's verdict
    observations = tuple(run_obs) + (rec.observations if rec else ()) + (
        deciding.observations if deciding is not None and deciding is not rec else ())
    return Verdict(label, lines, recommended, _summary(label, recommended, cvs, broken), observations, tuple(cvs),
                   weak_signals=weak)


def _step_word(step: int, lang: str) -> str:
    return f"step {step}" if lang == "en" else f"{step}스텝"


def _summary(label: str, rec: int | None, cvs: list[CheckpointVerdict], broken: list[Observation]) -> dict[str, str]:
    later = [c.step for c in cvs if rec is not None and c.step > rec and c.label == "over"]
    if label == "broken":
        first = broken[0].text
        salvage = _t(f" Checkpoint {rec} was saved before it broke.", f" 깨지기 전에 {rec}스텝이 저장됐습니다.") \
            if rec is not None else _t("", "")
        return _t(f"Broken: {first['en']}. Fix the numbers first; the pictures of a broken run say nothing about "
                  f"the dose.{salvage['en']}",
                  f"망가짐: {first['ko']}. 수치 문제부터 고치세요. 망가진 실행의 그림으로는 학습량을 판단할 수 "
                  f"없습니다.{salvage['ko']}")
    if label == "fit":
        tail = _t(f" Later checkpoints ({', '.join(map(str, later))}) start to overfit.",
                  f" 이후 체크포인트({', '.join(map(str, later))})는 과적합이 시작됩니다.") if later else _t("", "")
        use = _t(f"use step {rec}; ", f"{rec}스텝을 쓰세요. ") if rec is not None else _t("", "")
        return _t(f"Fit: {use['en']}nothing needs to change.{tail['en']} Confirm it with the strength sweep.",
                  f"알맞음: {use['ko']}바꿀 것이 없습니다.{tail['ko']} 강도 비교로 확인하세요.")
    if label == "under":
        last = _t(f"even the last checkpoint (step {rec})", f"마지막 체크포인트({rec}스텝)도") if rec is not None \
            else _t("the run", "이 실행은")
        return _t(f"Under-trained: {last['en']} has not learned enough. Train longer or raise the learning rate "
                  "(one of the two).",
                  f"미적합: {last['ko']} 아직 덜 배웠습니다. 더 오래 학습하거나 학습률을 올리세요(둘 중 하나만).")
    where = _t(f" Step {rec} is the least pushed save.", f" {rec}스텝이 가장 덜 밀린 체크포인트입니다.") \
        if rec is not None else _t("", "")
    return _t(f"Over-trained: the run pushed too far.{where['en']} Lower the dose (learning rate or steps) and "
              "train again.",
              f"과적합: 너무 멀리 끌고 갔습니다.{where['ko']} 학습량(학습률이나 스텝)을 낮춰 다시 학습하세요.")


# ----------------------------------------------------------------------------------- reading a symptom


def _json(verdict: Verdict | dict[str, Any]) -> dict[str, Any]:
    return verdict.to_json() if isinstance(verdict, Verdict) else verdict


def symptom_causes(symptom_id: str, verdict: Verdict | dict[str, Any] | None, config: Config | None = None):
    """A symptom's causes as (cause, lesser): those that agree with the run's verdict first in the knowledge
    base's order, then those that point away from it ("undertrained" for "not alike" on a run judged over)."""
    from trainer.doctor.kb import load_kb

    causes = load_kb().causes_for(symptom_id, config)
    label = None if verdict is None or _json(verdict).get("forecast") else _json(verdict)["label"]
    marked = [(c, bool(label and c.leans and label not in c.leans)) for c in causes]
    return [m for m in marked if not m[1]] + [m for m in marked if m[1]]


def symptom_lean(symptom_id: str, config: Config | None = None) -> str | None:
    """The verdict a symptom points to by itself: its most likely cause's, when that cause points to one."""
    from trainer.doctor.kb import load_kb

    causes = load_kb().causes_for(symptom_id, config)
    return causes[0].leans[0] if causes and len(causes[0].leans) == 1 else None


def symptom_reading(symptom_id: str, verdict: Verdict | dict[str, Any] | None,
                    config: Config | None = None) -> dict[str, str] | None:
    """How to read a symptom the user picked when the run's evidence says otherwise: None when they agree (or the
    symptom points nowhere in particular), else one paragraph saying what it more likely means and why."""
    from trainer.doctor.kb import load_kb

    lean = symptom_lean(symptom_id, config)
    if verdict is None or lean is None:
        return None
    v = _json(verdict)
    if v.get("forecast") or lean == v["label"]:
        return None
    title = {lang: load_kb().symptom(symptom_id).text("title", lang) for lang in ("en", "ko")}
    meaning = {
        "over": _t("the LoRA was pushed too far (memorised pictures, a lost prompt), not that it learned too little",
                   "LoRA가 너무 멀리 끌려갔다는 뜻(그림을 외우고 프롬프트를 잃음)이지, 덜 배웠다는 뜻이 아닙니다"),
        "under": _t("it has not learned enough yet, not that it was pushed too far",
                    "아직 덜 배웠다는 뜻이지, 너무 멀리 끌려갔다는 뜻이 아닙니다"),
        "fit": _t("something other than the amount of training: the checkpoint or strength in use, the prompt's "
                  "words, or the data",
                  "학습량이 아닌 다른 것: 쓰고 있는 체크포인트나 강도, 프롬프트의 단어, 또는 데이터라는 뜻입니다"),
        "broken": _t("the numbers broke (nan/inf); fix that first, the pictures of a broken run say nothing about "
                     "the dose",
                     "수치가 깨졌다(nan/inf)는 뜻입니다. 그것부터 고치세요. 망가진 실행의 그림으로는 학습량을 판단할 수 "
                     "없습니다"),
    }[v["label"]]
    why = v["evidence"][0] if v.get("evidence") else _t("", "")
    rec = v.get("recommended_step")
    use = _t(f" Check step {rec} first.", f" 먼저 {rec}스텝을 확인하세요.") \
        if rec is not None and v["label"] in ("fit", "over") else _t("", "")
    label = LABEL_TEXT[v["label"]]
    return _t(
        f"Your run's measures say {label['en']} ({why['en']}), so “{title['en']}” more likely means {meaning['en']}. "
        f"Causes that point the other way are listed last.{use['en']}",
        f"이 실행의 측정값은 {label['ko']}입니다({why['ko']}). 그래서 “{title['ko']}”은(는) {meaning['ko']}. "
        f"반대 방향의 원인은 맨 뒤에 두었습니다.{use['ko']}")
