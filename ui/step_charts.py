"""The wizard's one-off charts (the Dataset step's histograms, the Plan step's dose gauge, Review's model measures
over the saves): plotly figures from plain values, in the live plots' colours and axis style (:mod:`ui.plots`)."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .plots import AXIS, BLUE, GREEN, ORANGE, RED, TEMPLATE, tr

MAX_STEP_TICKS = 12  # up to this many measured steps, the model measures' step axis ticks at each of them


def dose_gauge(dose: float, low: float, high: float, lang: str = "en") -> go.Figure:
    """The dose against the preset's zone: under (grey), fit (green), over (red)."""
    top = max(high * 2.0, dose * 1.15, 1e-9)
    fig = go.Figure(go.Indicator(
        mode="gauge+number", value=dose, number={"valueformat": ".3g"},
        title={"text": tr("dose", lang), "font": {"size": 14}},
        gauge={
            "axis": {"range": [0, top]},
            "bar": {"color": "#333333", "thickness": 0.25},
            "steps": [{"range": [0, low], "color": "#e0e0e0"}, {"range": [low, high], "color": "#a5d6a7"},
                      {"range": [high, top], "color": "#ef9a9a"}],
            "threshold": {"line": {"color": RED, "width": 3}, "thickness": 0.8, "value": dose},
        },
    ))
    fig.update_layout(height=250, margin={"l": 30, "r": 30, "t": 50, "b": 10})
    return fig


def histogram_figure(bins: Sequence[dict], title: str, lang: str = "en") -> go.Figure:
    """A bar chart of the scan's size or aspect histogram (``label``/``count`` rows)."""
    fig = go.Figure(go.Bar(x=[b["label"] for b in bins], y=[b["count"] for b in bins], marker={"color": BLUE}))
    fig.update_layout(title={"text": title, "font": {"size": 14}}, height=240, template=TEMPLATE,
                      paper_bgcolor="white", plot_bgcolor="white",
                      margin={"l": 40, "r": 10, "t": 40, "b": 40}, yaxis={"title": tr("count", lang)})
    return fig


def model_measures_figure(rows: dict[int, dict], recommended: int | None, hold_shows: float, drift_limit: float,
                          lang: str = "en") -> go.Figure:
    """The run's own model over its saves (``rows``: :func:`trainer.doctor.model_measures.measures_by_step`):
    trigger hold (does the trigger alone bring the subject, left axis) and prior drift (how far what the model
    draws without the trigger moved, right axis), each with the line the verdict reads it against, and the
    recommended save marked."""
    steps = sorted(rows)
    fig = go.Figure()
    gain = [rows[s].get("trigger_hold") for s in steps]
    drift = [rows[s].get("prior_drift") for s in steps]
    fig.add_trace(go.Scatter(x=steps, y=gain, name=tr("trigger_hold", lang), mode="lines+markers",
                             line={"color": BLUE, "width": 2}))
    fig.add_trace(go.Scatter(x=steps, y=drift, name=tr("prior_drift", lang), mode="lines+markers", yaxis="y2",
                             line={"color": ORANGE, "width": 2}))
    fig.add_hline(y=hold_shows, line={"color": BLUE, "dash": "dot", "width": 1})
    fig.add_hline(y=drift_limit, line={"color": ORANGE, "dash": "dot", "width": 1}, yref="y2")
    if recommended is not None and recommended in rows:
        fig.add_vline(x=recommended, line={"color": GREEN, "dash": "dash", "width": 2})
        fig.add_trace(go.Scatter(x=[recommended], y=[rows[recommended].get("trigger_hold")], mode="markers",
                                 name=tr("recommended", lang), marker={"symbol": "star", "size": 14, "color": GREEN}))
    top_drift = max([d for d in drift if d is not None] + [drift_limit]) * 1.15
    fig.update_layout(
        title={"text": tr("model_measures", lang), "font": {"size": 14}}, height=300, template=TEMPLATE,
        paper_bgcolor="white", plot_bgcolor="white", margin={"l": 50, "r": 50, "t": 40, "b": 10},
        # the legend at the foot of the figure (y in the figure's own height, not the plot area's): plotly keeps
        # its rows out of the axes' room, so the step axis's title stays above it however many rows a narrow
        # screen makes of it (one placed under the plot area at a fraction of its height covered that title)
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "xanchor": "left"},
        # a tick at each measured step while they are few: a run of a few steps had ticks at 0.5, 1.5
        xaxis={**AXIS, "title": tr("step", lang),
               **({"tickmode": "array", "tickvals": steps} if len(steps) <= MAX_STEP_TICKS else {})},
        yaxis={**AXIS, "title": tr("trigger_hold", lang)},
        yaxis2={"title": tr("prior_drift", lang), "overlaying": "y", "side": "right", "range": [0, top_drift],
                "tickmode": "auto",  # round numbers (plotly.js 4 puts an overlaying axis on the left grid: 0.088, 0.349)
                "showgrid": False},
    )
    return fig
