"""Plotly figures from metric rows: pure functions, no gradio, unit-tested.

A tab gets the whole figures once (its first look, a new run or language) and then only the new points
(:func:`new_points`, which the page appends to the figures it holds), so a poll costs the rows that arrived.
A whole figure is decimated to at most :data:`MAX_POINTS` per trace (per bucket the min and the max
survive, and so does every non-finite or skipped step). A non-finite value is a gap in a line, which is easy
to miss: such steps get their own red markers and vertical lines. ``layout.uirevision`` is the run's id, so a
user's zoom survives the updates of one run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

import words
from trainer.run.events import ABSENT, StepRow, present

MAX_POINTS = 1000
HEIGHT = 280  # px, every chart here; the live plots' divs get it in CSS too (ui/app.py)
MAX_VLINES = 20  # vertical lines for non-finite steps; beyond that the markers alone say it
SMOOTHING = 0.9
RED, BLUE, GREY, ORANGE, GREEN = "#d62728", "#1f77b4", "#9e9e9e", "#ff7f0e", "#2ca02c"
# "plotly_white" by hand: resolving a named template costs ~13 ms per figure, four figures per poll
TEMPLATE = "none"
Fig = dict[str, Any]  # a figure as plotly JSON: {"data": [...], "layout": {...}}
AXIS = {"gridcolor": "#ebf0f8", "linecolor": "#ebf0f8", "zerolinecolor": "#ebf0f8", "showgrid": True,
         "automargin": True}


def tr(key: str, lang: str) -> str:
    """A chart's word (``plot.<key>`` in words/plots.py) in ``lang``."""
    return words.say(f"plot.{key}", lang)


def value(v: Any) -> float:
    """A metric as a float: None, "nan", "inf" (how JSON files write them) and numbers; NaN when absent."""
    if v is None or v is ABSENT:
        return math.nan
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return math.nan
    return float(v)


def _gap(v: float) -> float | None:
    """Plotly draws a gap for null; NaN/Inf would not survive JSON as numbers."""
    return v if math.isfinite(v) else None


def decimate(xs: Sequence[float], ys: Sequence[float], max_points: int = MAX_POINTS,
             keep: Iterable[int] = ()) -> tuple[list[float], list[float]]:
    """At most ``max_points`` points: the indices in ``keep`` (capped evenly when there are too many), the first
    and last point, and per bucket of the rest the minimum and maximum finite value."""
    n = len(xs)
    if n <= max_points:
        return list(xs), list(ys)
    kept = sorted(set(keep) | {0, n - 1})
    if len(kept) > max_points // 2:
        stride = len(kept) / (max_points // 2)
        kept = [kept[int(i * stride)] for i in range(max_points // 2)]
    chosen = set(kept)
    buckets = max(1, (max_points - len(chosen)) // 2)
    size = n / buckets
    for b in range(buckets):
        lo, hi = int(b * size), min(n, int((b + 1) * size))
        finite = [i for i in range(lo, hi) if math.isfinite(ys[i])]
        if finite:
            chosen.add(min(finite, key=lambda i: ys[i]))
            chosen.add(max(finite, key=lambda i: ys[i]))
    idx = sorted(chosen)[:max_points]
    return [xs[i] for i in idx], [ys[i] for i in idx]


def smooth(values: Sequence[float], beta: float = SMOOTHING) -> list[float]:
    """Debiased exponential moving average (as TensorBoard draws it); non-finite values are passed over."""
    return smooth_from(values, beta=beta)[0]


def smooth_from(values: Sequence[float], avg: float = 0.0, count: int = 0,
                beta: float = SMOOTHING) -> tuple[list[float], float, int]:
    """:func:`smooth` continued from the running average ``avg`` of ``count`` earlier finite values; returns
    the smoothed values and the running average and count after them."""
    out = []
    for v in values:
        if math.isfinite(v):
            avg = beta * avg + (1 - beta) * v
            count += 1
        out.append(avg / (1 - beta**count) if count else math.nan)
    return out, avg, count


def _bad_rows(rows: Sequence[StepRow]) -> list[int]:
    return [i for i, r in enumerate(rows) if r.nonfinite or not math.isfinite(value(r.loss))]


class _Chart:
    """Traces, shapes and annotations collected as plain dicts and returned as figure JSON: plotly's objects
    validate every assignment (~15 ms a figure with ``update_layout``/``add_trace``, four figures a poll);
    :func:`as_figure` validates the same dict once, for tests."""

    def __init__(self, title: str, ytitle: str, uirevision: str, lang: str, log_y: bool = False):
        self.traces: list[dict] = []
        self.shapes: list[dict] = []
        self.annotations: list[dict] = []
        self.layout: dict[str, Any] = {
            "title": {"text": title, "font": {"size": 14}, "x": 0.02, "xanchor": "left"}, "height": HEIGHT,
            "margin": {"l": 50, "r": 10, "t": 40, "b": 40}, "uirevision": uirevision,
            "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
            "hovermode": "x unified", "paper_bgcolor": "white",
            "plot_bgcolor": "white", "font": {"color": "#2a3f5f"},
            "xaxis": {"title": {"text": tr("step", lang)}, "rangemode": "nonnegative", **AXIS},  # no step -0.5
            "yaxis": {"title": {"text": ytitle}, "type": "log" if log_y else "linear", **AXIS},
        }

    def line(self, xs, ys, name: str, color: str, keep=(), width: float = 1.5, dash: str | None = None) -> None:
        dx, dy = decimate(xs, ys, keep=keep)
        self.traces.append({"type": "scatter", "x": dx, "y": [_gap(v) for v in dy], "name": name, "mode": "lines",
                            "line": {"color": color, "width": width, "dash": dash}, "connectgaps": False})

    def markers(self, xs, ys, name: str, marker: dict, text: list[str] | None = None) -> None:
        self.traces.append({"type": "scatter", "x": xs, "y": [_gap(v) for v in ys], "name": name,
                            "mode": "markers", "marker": marker, **({"text": text} if text else {})})

    def vline(self, x: float, color: str) -> None:
        self.shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                            "line": {"color": color, "width": 1, "dash": "dot"}})

    def hline(self, y: float, color: str, label: str) -> None:
        self.shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": y, "y1": y,
                            "line": {"color": color, "width": 1, "dash": "dash"}})
        self.annotations.append({"text": label, "xref": "paper", "yref": "y", "x": 0, "y": y, "xanchor": "left",
                                 "yanchor": "bottom", "showarrow": False, "font": {"color": color, "size": 11}})

    def note(self, text: str) -> None:
        self.layout["xaxis"]["visible"] = self.layout["yaxis"]["visible"] = False
        self.annotations.append({"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5,
                                 "y": 0.5, "font": {"color": GREY, "size": 13}})

    def figure(self) -> Fig:
        return {"data": self.traces, "layout": {**self.layout, "shapes": self.shapes, "annotations": self.annotations}}


def _alert_markers(chart: _Chart, rows: Sequence[StepRow], bad: list[int], ys: Sequence[float], lang: str) -> None:
    """A red x for each non-finite step at the last finite height, and vertical lines for the first ones."""
    if not bad:
        return
    xs, heights, texts = [], [], []
    last = next((v for v in ys if math.isfinite(v)), 0.0)
    j = 0
    for i in bad:
        while j < i:
            if math.isfinite(ys[j]):
                last = ys[j]
            j += 1
        xs.append(rows[i].step)
        heights.append(last)
        texts.append(f"{tr('nonfinite', lang)}: {rows[i].nonfinite or 'loss'}")
    xs, heights, texts = xs[:MAX_POINTS], heights[:MAX_POINTS], texts[:MAX_POINTS]
    chart.markers(xs, heights, tr("nonfinite", lang), {"color": RED, "symbol": "x", "size": 11,
                                                       "line": {"width": 2}}, texts)
    for x in xs[:MAX_VLINES]:
        chart.vline(x, RED)


def loss_figure(rows: Sequence[StepRow], lang: str = "en", uirevision: str = "run") -> Fig:
    """Loss per optimizer step, its EMA, and markers where it (or anything) was not finite."""
    chart = _Chart(tr("loss", lang), tr("loss", lang), uirevision, lang)
    chart.layout["yaxis"]["rangemode"] = "nonnegative"  # a squared error: plotly's padding would reach below 0
    if not rows:
        chart.note(tr("no_data", lang))
        return chart.figure()
    xs = [r.step for r in rows]
    ys = [value(r.loss) for r in rows]
    bad = _bad_rows(rows)
    chart.line(xs, ys, tr("loss_raw", lang), GREY, keep=bad, width=1)
    chart.line(xs, smooth(ys), tr("loss_smooth", lang), BLUE, keep=bad, width=2.5)
    _validation(chart, rows, lang)
    _alert_markers(chart, rows, bad, ys, lang)
    return chart.figure()


def _validation(chart: _Chart, rows: Sequence[StepRow], lang: str) -> None:
    """The validation loss where the run measured it (held-out pictures, fixed noise), the lowest one starred."""
    scored = [(r.step, value(r.val_loss)) for r in rows if present(r.val_loss)]
    scored = [(s, v) for s, v in scored if math.isfinite(v)]
    if not scored:
        return
    chart.traces.append({"type": "scatter", "x": [s for s, _ in scored], "y": [v for _, v in scored],
                         "name": tr("val_loss", lang), "mode": "lines+markers",
                         "line": {"color": ORANGE, "width": 2}, "marker": {"size": 6}})
    best_step, best = min(scored, key=lambda sv: (sv[1], sv[0]))
    chart.markers([best_step], [best], tr("val_best", lang), {"color": ORANGE, "symbol": "star", "size": 14})


GRAD_BAND = "rgba(255, 127, 14, 0.35)"  # ORANGE, pale: the before-clipping band under the after line


def grad_figure(rows: Sequence[StepRow], max_norm: float = 0.0, lang: str = "en", uirevision: str = "run") -> Fig:
    """Total gradient norm before and after clipping (log scale) with the clipping threshold."""
    chart = _Chart(tr("grad", lang), tr("grad", lang), uirevision, lang, log_y=True)
    chart.layout["yaxis"]["exponentformat"] = "power"
    if not rows:
        chart.note(tr("no_data", lang))
        return chart.figure()
    xs = [r.step for r in rows]
    before = [value(r.grad_norm) for r in rows]
    after = [value(r.grad_norm_clipped) for r in rows]
    bad = sorted(set(_bad_rows(rows)) | {i for i, v in enumerate(before) if not math.isfinite(v)})
    # Unclipped steps have after == before, so two like lines would hide each other: "before" is a wide pale
    # band and "after" a thin dark line drawn over it (inside the band where nothing was clipped, at the
    # threshold below it where clipping cut the gradient).
    chart.line(xs, before, tr("grad_before", lang), GRAD_BAND, keep=bad, width=7)
    chart.line(xs, after, tr("grad_after", lang), BLUE, keep=bad, width=1.5)
    if max_norm and max_norm > 0:
        chart.hline(max_norm, GREEN, f"{tr('max_norm', lang)} {max_norm:g}")
    _alert_markers(chart, rows, bad, [v if v > 0 else math.nan for v in before], lang)
    return chart.figure()


def lr_figure(rows: Sequence[StepRow], lang: str = "en", uirevision: str = "run") -> Fig:
    chart = _Chart(tr("lr", lang), "lr", uirevision, lang)
    chart.layout["yaxis"].update(exponentformat="e", rangemode="nonnegative")  # warmup starts at 0, not below
    if not rows:
        chart.note(tr("no_data", lang))
        return chart.figure()
    chart.line([r.step for r in rows], [value(r.lr) for r in rows], "lr", GREEN)
    return chart.figure()


def scale_figure(rows: Sequence[StepRow], lang: str = "en", uirevision: str = "run") -> Fig:
    """The fp16 loss scale (log 2) with every skipped step marked; a note when there is no scaler."""
    chart = _Chart(tr("scale", lang), tr("scale", lang), uirevision, lang, log_y=True)
    chart.layout["yaxis"].update(dtick=math.log10(2) * 4, exponentformat="power")
    scales = [value(r.loss_scale) for r in rows]
    if not any(math.isfinite(s) for s in scales):
        chart.note(tr("no_scale", lang) if rows else tr("no_data", lang))
        return chart.figure()
    xs = [r.step for r in rows]
    skipped = [i for i, r in enumerate(rows) if r.skipped]
    chart.line(xs, scales, tr("scale", lang), BLUE, keep=skipped)
    if skipped:
        pick = skipped[:MAX_POINTS]
        chart.markers([xs[i] for i in pick], [scales[i] for i in pick], tr("skipped", lang),
                      {"color": ORANGE, "symbol": "triangle-down", "size": 9})
    return chart.figure()


LIVE = ("loss", "grad", "lr", "scale")  # the Train step's figures, as the page names them


def live_figures(rows: Sequence[StepRow], max_norm: float, lang: str, uirevision: str) -> dict[str, Fig]:
    """The Train step's four figures of these rows, whole (decimated)."""
    return {"loss": loss_figure(rows, lang, uirevision), "grad": grad_figure(rows, max_norm, lang, uirevision),
            "lr": lr_figure(rows, lang, uirevision), "scale": scale_figure(rows, lang, uirevision)}


def wordless(fig: Fig) -> Fig:
    """The figure without a word on it (no title, axis titles, legend names or notes): what the Train step's
    plots hold before the page draws its own figures into them. Their value is the same for every tab, whatever
    its language, so words there would show in the server's language until the page's first draw."""
    layout = {**fig["layout"], "title": {**fig["layout"]["title"], "text": ""}, "annotations": [],
              "showlegend": False}
    for axis in ("xaxis", "yaxis"):
        layout[axis] = {**layout[axis], "title": {"text": ""}}
    return {"data": [{**trace, "name": ""} for trace in fig["data"]], "layout": layout}


def live_carry(rows: Sequence[StepRow]) -> dict[str, Any]:
    """What :func:`new_points` needs to know of the rows a tab's whole figures were drawn from: the loss
    EMA's running average and count, and whether the scale figure has a line (fp16) or only its note."""
    _, avg, count = smooth_from([value(r.loss) for r in rows])
    return {"ema": [avg, count], "scaled": any(math.isfinite(value(r.loss_scale)) for r in rows)}


def changes_shape(rows: Iterable[StepRow], carry: dict[str, Any]) -> bool:
    """True when these new rows add more than points to the lines: a non-finite or skipped step (markers and
    vertical lines) or the first loss scale (the scale figure's note becomes a line). Such rows take whole
    figures."""
    for r in rows:
        if r.nonfinite or r.skipped or present(r.val_loss):  # a validation point redraws
            return True
        if not (math.isfinite(value(r.loss)) and math.isfinite(value(r.grad_norm))):
            return True
        if not carry["scaled"] and math.isfinite(value(r.loss_scale)):
            return True
    return False


def new_points(rows: Sequence[StepRow], carry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The points that new rows (none of which :func:`changes_shape`) add to the live figures' lines, and the
    carry after them: ``{"x": steps, "y": {figure: [ys per line trace, in the whole figure's trace order]}}``.
    Appended to the whole figures of the earlier rows they give the whole figures of all rows, as long as no
    decimation happened."""
    def ys(values: list[Any]) -> list[float | None]:
        return [_gap(value(v)) for v in values]

    loss = [value(r.loss) for r in rows]
    smoothed, avg, count = smooth_from(loss, *carry["ema"])
    y = {"loss": [[_gap(v) for v in loss], [_gap(v) for v in smoothed]],
         "grad": [ys([r.grad_norm for r in rows]), ys([r.grad_norm_clipped for r in rows])],
         "lr": [ys([r.lr for r in rows])], "scale": [ys([r.loss_scale for r in rows])] if carry["scaled"] else []}
    return {"x": [r.step for r in rows], "y": y}, {**carry, "ema": [avg, count]}


COMPARE = {"loss": ("loss", False), "grad": ("grad_norm", True), "val": ("val_loss", False)}  # figure: metric, log y
COMPARE_STYLE = {"a": (BLUE, None), "b": (ORANGE, "dash")}  # run A solid blue, run B dashed orange


def compare_figure(series: dict[str, dict], figure: str, names: dict[str, str], lang: str = "en") -> Fig:
    """One metric of two runs overlaid (``series`` as :func:`trainer.review.compare.compare_runs` gives it):
    each run in its own colour and dash, the loss smoothed over its raw line; a note when neither has it."""
    metric, log_y = COMPARE[figure]
    title = tr({"loss": "loss", "grad": "grad", "val": "val_loss"}[figure], lang)
    chart = _Chart(title, title, f"compare-{names.get('a')}-{names.get('b')}", lang, log_y=log_y)
    drawn = False
    for side in ("a", "b"):
        s = series.get(side, {}).get(metric)
        if not s or not s["steps"]:
            continue
        color, dash = COMPARE_STYLE[side]
        ys = [value(v) for v in s["values"]]
        label = f"{side.upper()}: {names.get(side, side)}"
        if figure == "loss":
            chart.line(s["steps"], ys, f"{label} ({tr('loss_raw', lang)})", color, width=1, dash=dash)
            chart.traces[-1]["opacity"] = 0.35
            chart.line(s["steps"], smooth(ys), f"{label} ({tr('loss_smooth', lang)})", color, width=2.5, dash=dash)
        else:
            chart.line(s["steps"], ys, label, color, width=2, dash=dash)
        drawn = True
    if not drawn:
        chart.note(tr("no_series", lang))
    return chart.figure()


def as_figure(fig: Fig) -> go.Figure:
    """The figure JSON as a validated plotly Figure (raises on a key plotly does not know)."""
    return go.Figure(fig)
