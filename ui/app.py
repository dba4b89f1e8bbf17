"""``build_app(ctx)``: the wizard (Dataset → Steps → Preset → Train → Review → Troubleshoot), the language
switch, the runner poll, and ``launch_app`` with the security settings."""

from __future__ import annotations

from typing import Any

import gradio as gr

from . import live, plots
from .binding import UI
from .context import AppContext
from .early import EarlyScript
from .fields import NAMES
from .i18n import t
from .paths import MAX_UPLOAD
from .remember import remember_inputs
from .security import Security, app_kwargs
from .steps import dataset, gates, plan, preset, review, train, train_poll, troubleshoot
from .widgets import relabel_fields

CSS = """
.ld-error {background:#fdecea;border:1px solid #f5c2c0;color:#8a1c1c;padding:8px 12px;border-radius:6px}
.ld-ok {background:#edf7ed;border:1px solid #b7dfb9;color:#1e4620;padding:8px 12px;border-radius:6px}
.ld-alert {background:#fdecea;border:2px solid #d62728;padding:12px 16px;border-radius:8px;color:#5f1010}
.ld-alert h3 {margin:0 0 8px 0;color:#b71c1c}
.ld-alert th {text-align:left;padding-right:12px;white-space:nowrap;vertical-align:top}
.ld-rx {margin-top:10px;padding-top:8px;border-top:1px solid #f5c2c0}
.ld-grid img {max-width:min(256px,20vw);height:auto;image-rendering:pixelated;border-radius:4px}
.ld-grid th, .ld-grid td {padding:4px;text-align:center;font-size:12px}
.ld-grid tr.ld-rec {background:#fff8e1}
.ld-card-text {font-size:12px;min-height:48px}
/* a family's cards keep a card's width: a family with one preset has no card as wide as the page */
#ld-card-families {flex-wrap:wrap;column-gap:28px}
#ld-card-families > .ld-card-group {flex:0 1 auto !important;max-width:100%}
.ld-cards {flex-wrap:wrap}
.ld-cards > .column {flex:1 1 140px !important;max-width:200px;min-width:140px !important}
.ld-cards button {flex-grow:0}
#ld-header {flex-wrap:wrap}
#ld-title {flex:1 1 300px;min-width:min(300px,100%)}
#ld-title h1 {word-break:keep-all;overflow-wrap:normal}
.ld-captions .thumbnail-item {aspect-ratio:auto;height:auto;overflow:visible;display:flex;flex-direction:column}
.ld-captions .thumbnail-item > img {aspect-ratio:1;height:auto}
.ld-captions .caption-label {position:static;white-space:normal;overflow:visible;text-overflow:clip;max-width:none;
  opacity:1;border:none;border-radius:0;background:none;overflow-wrap:anywhere;text-align:center}
#ld-compare-grid-a, #ld-compare-grid-b {flex:1 1 0;min-width:0;overflow-x:auto}
.ld-compare-grid {overflow-x:auto;max-width:100%}
.ld-compare-grid .ld-grid img {max-width:min(128px,9vw)}
#ld-sweep .grid-wrap {max-height:none;height:auto;overflow-y:visible}
#ld-sweep img {image-rendering:pixelated}
#ld-locked-hint {color:var(--body-text-color-subdued);font-size:var(--text-sm)}
#ld-grid .html-container {overflow-x:auto}
/* Korean breaks between words, not inside them (a narrow table's headers went one letter a line) */
.ld-grid th, #ld-wizard :is(th, td) span.text.wrap {word-break:keep-all}
.ld-grid tbody th {min-width:6em}
/* galleries: at most their columns, each at least 100 px, so a phone shows three pictures a row and no more */
#ld-wizard .grid-wrap .grid-container {grid-template-columns:repeat(auto-fill,
  minmax(max(100px, calc((100% - (var(--grid-cols) - 1) * var(--spacing-lg)) / var(--grid-cols))), 1fr))}
"""
# The live plots' divs have the figures' height of their own: plotly's resize deletes a figure's height, and a
# responsive plot without one takes 100 % of its div, whose height is then that of the plot: 0 (ui/live_view.js).
CSS += f".ld-live-plot .js-plotly-plot {{height:{plots.HEIGHT}px}}\n"

STEPS = (("dataset", "step_dataset", dataset), ("plan", "step_plan", plan), ("preset", "step_preset", preset),
         ("train", "step_train", train), ("review", "step_review", review),
         ("troubleshoot", "step_troubleshoot", troubleshoot))
DELETE_CACHE = (3600, 6 * 3600)  # every hour, remove cached uploads and outputs older than six hours


def build_app(ctx: AppContext) -> gr.Blocks:
    ui = UI(ctx)
    lang = ctx.lang
    with gr.Blocks(title="LoRA Doctor", delete_cache=DELETE_CACHE, analytics_enabled=False) as demo:
        with gr.Row(elem_id="ld-header"):
            ui.add("title", gr.Markdown(t("title", lang), elem_id="ld-title"), "title", "value")
            ui.add("lang", gr.Radio(choices=[("한국어", "ko"), ("English", "en")], value=lang, show_label=False,
                                    label=t("lang_label", lang), scale=0, min_width=220, elem_id="ld-lang"))
        ui.add("report_state", gr.State(None))
        ui.add("poll_state", gr.State(None))
        # Tabs, not gr.Walkthrough: a walkthrough disables every step after the selected one, so going back
        # to an earlier step (or reloading the page) locked finished runs' Review out; tabs keep what opened open
        gates.locked_hint(ui)
        # "wrap": on a phone the six steps take two rows; gradio's "menu" hid the last three behind "⋯"
        with gr.Tabs(selected=0, elem_id="ld-wizard", overflow_behavior="wrap") as wizard:
            ui.add("wizard", wizard)
            for i, (key, name, module) in enumerate(STEPS):
                with gr.Tab(t(name, lang), id=i, interactive=i == 0, elem_id=f"ld-{key}") as step:
                    ui.add(name, step, name)
                    module.build(ui)
        timer = gr.Timer(train_poll.IDLE_POLL_S)  # the poll sets its own pace (ui/steps/train_poll.py poll_every)
        lang_known = _remember_language(ui, demo)
        dataset.wire(ui)
        plan.wire(ui)
        preset.wire(ui)
        train.wire(ui, timer, lang_known)  # the first poll asks in the page's language: its plots are drawn in it
        review.wire(ui)
        troubleshoot.wire(ui)
        _wire_language(ui)
        _wire_first_load(ui, remember_inputs(ui, demo))  # the inputs a reload kept are back before the scan
    return demo


def _wire_language(ui: UI) -> None:
    from trainer.config.presets import list_presets

    def relabel(*, lang: str) -> dict[str, Any]:
        out: dict[str, Any] = relabel_fields(ui, lang)
        for name, key, attr in ui.texts:
            text: dict[str, Any] = {attr: t(key, lang)}  # (the attribute is a label, a value, an info…)
            out[name] = gr.update(**text)
        for p in list_presets():
            if p.id in ui.cards:
                out[f"card_{p.id}"] = gr.update(value=p.label(lang))
                out[f"card_{p.id}_md"] = gr.update(value=p.blurb(lang))
        out["device_md"] = preset.device_text(ui, lang)
        out["preset"] = gr.update(choices=preset.preset_choices(ui, lang), label=t("preset_label", lang))
        runs = ui.ctx.run_choices(lang)  # the runs' statuses, in words of this language
        for name in ("review_run", "ts_run", "compare_a", "compare_b"):
            out[name] = {**out.get(name, gr.update()), "choices": runs}
        return out

    names = [n for n in NAMES if n in ui.c] + [name for name, _, _ in ui.texts]
    names += [f"card_{pid}" for pid in ui.cards] + [f"card_{pid}_md" for pid in ui.cards] + ["device_md", "preset"]
    names += ["review_run", "ts_run", "compare_a", "compare_b"]
    ui.on(ui["lang"].change, relabel, ["lang"], list(dict.fromkeys(names)), show_progress="hidden")


LANG_KEY = "lora-doctor-lang"
# On load: ``?lang=ko`` in the address, else the language this browser chose last, else the app's own.
# gradio's own words (an upload box's "Drop File Here", the footer) follow the browser's language unless told:
# its core module's changeLocale, the call its settings panel makes, is given the app's language. The module's
# file name carries a build hash, so it is found among the page's loaded scripts (or named in gradio's entry).
GRADIO_LOCALE_JS = r"""async (lang) => {
    const isCore = (url) => /\/assets\/core-[\w-]+\.js$/.test(url);
    let url = performance.getEntriesByType("resource").map((e) => e.name).find(isCore);
    if (!url) {
        const entry = document.querySelector('script[type="module"][src*="/assets/index-"]');
        const found = entry && (await (await fetch(entry.src)).text()).match(/core-[\w-]+\.js/);
        url = found ? new URL(found[0], entry.src).href : null;
    }
    if (url) (await import(url)).changeLocale?.(lang);
}"""
LANG_READ_JS = f"""(current) => {{
    const asked = new URLSearchParams(window.location.search).get("lang");
    let saved = null;
    try {{ saved = window.localStorage.getItem("{LANG_KEY}"); }} catch (e) {{}}
    const lang = asked || saved;
    if (asked && ["ko", "en"].includes(asked)) {{  // a choice too: remembered even when it changes nothing here
        try {{ window.localStorage.setItem("{LANG_KEY}", asked); }} catch (e) {{}}
    }}
    const chosen = ["ko", "en"].includes(lang) ? lang : current;
    ({GRADIO_LOCALE_JS})(chosen).catch((e) => console.warn("gradio's language", e));
    return chosen;
}}"""
LANG_SAVE_JS = f"""(lang) => {{
    try {{ window.localStorage.setItem("{LANG_KEY}", lang); }} catch (e) {{}}
    ({GRADIO_LOCALE_JS})(lang).catch((e) => console.warn("gradio's language", e));
}}"""


def _remember_language(ui: UI, demo: gr.Blocks) -> Any:
    """The chosen language survives a reload: the browser keeps it (localStorage) and sets it again on load,
    which relabels the page through the language switch's own change event. No server call either way.
    Returns the page-load event after which the switch holds the page's language."""
    ui["lang"].change(None, ui["lang"], None, js=LANG_SAVE_JS)
    return demo.load(None, ui["lang"], ui["lang"], js=LANG_READ_JS)


def _wire_first_load(ui: UI, opened: Any) -> None:
    """On opening the page: scan the preselected dataset (the demo) so every step that validates is open and
    Start trains at once; a scan error just stays on the Dataset step."""

    def first_scan(*, lang: str, report_state: Any, **values: Any) -> dict[str, Any]:
        return {**gates.unlocks_for_runs(ui), **dataset.opening_scan(ui, lang, report_state, values)}

    loaded = ui.on(opened, first_scan, ["lang", "report_state", *NAMES],
                   [o for o in dataset.REPORT_OUTPUTS if o != "dataset_path"], message="ds_msg", toast=False)
    dataset.rerender_on(ui, loaded)  # the language may have been switched while the scan ran


IDLE_POLL_S = 0.05  # gradio's own value on Windows
PROGRESS_POLL_S = 0.1


def calm_queue(demo: gr.Blocks) -> None:
    """gradio's queue (6.31, Linux/macOS) checks for work every 1 ms and for progress every 10 ms while idle:
    ~55 ms of CPU a second and a GIL hand-off each millisecond, which slows the training thread sharing the
    process. Its Windows intervals cost a click at most 50 ms more and the trainer nothing measurable."""
    queue = getattr(demo, "_queue", None)
    if queue is None or not hasattr(queue, "sleep_when_free"):
        return  # another gradio version: nothing to calm
    queue.sleep_when_free = max(queue.sleep_when_free, IDLE_POLL_S)
    queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free, PROGRESS_POLL_S)


def launch_app(demo: gr.Blocks, security: Security, host: str = "127.0.0.1", port: int | None = None,
               share: bool = False, prevent_thread_lock: bool = False, quiet: bool = False):
    """Launch with the policy: login when restricted, no extra allowed paths, upload size limit, no API page
    leaks before the login, only known Host names and the app's own Origin."""
    from starlette.middleware import Middleware

    demo.queue(default_concurrency_limit=1)
    calm_queue(demo)
    kwargs = app_kwargs(security)
    kwargs["middleware"].append(Middleware(EarlyScript))  # before gradio's scripts: no frames while idle
    launched = demo.launch(
        server_name=host,
        server_port=port,
        share=share,
        auth=security.auth,
        auth_message="LoRA Doctor" if security.auth else None,
        max_file_size=MAX_UPLOAD,
        prevent_thread_lock=True,  # the share link's host is known only now; blocked below when asked
        quiet=quiet,
        show_error=False,
        app_kwargs=kwargs,
        css=CSS,
        js=live.PAGE_JS,
        footer_links=["gradio", "settings"],
    )
    if share and demo.share_url:
        security.hosts.add(demo.share_url)
    if not prevent_thread_lock:
        demo.block_thread()
    return launched
