"""Every step in Korean, on a desktop (1400 px) and on a phone (390×844), in a real headless Chromium: no English
left on the pages (real names, numbers, file names, paths and the dataset's own words aside), nothing wider than
a phone's screen outside a box that scrolls on purpose, every gallery's pictures inside it, no plot's legend over
its titles or axis labels, all six steps on the tab bar (none behind "⋯"), and before the first run a line that
says why Review and Troubleshoot are grey. The Train step's live plots are in Korean from the first frame they
are drawn in (they were gradio's English placeholders for a few seconds).
The workspace holds one short run of the demo (4 steps, trained once for the module) so Review and Troubleshoot
have something to show. Screenshots: ``test-artifacts/ko-*.png`` and ``test-artifacts/phone-*.png``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_browser import ARTIFACTS, browser, pytestmark  # noqa: F401 (the same marks and Chromium)

STEPS = ("dataset", "plan", "preset", "train", "review", "troubleshoot")
# what each step shows once it has drawn (the Korean page, with the run in the workspace)
READY = {
    "dataset": "() => !!document.querySelector('#ld-dataset')?.innerText.includes('쓸 수 있는 그림')",
    "plan": "() => !!document.querySelector('#ld-plan')?.innerText.includes('버킷을 반영한 총합')",
    "preset": "() => !!document.querySelector('#ld-card-demo-character') && !!document.querySelector('#ld-preset')"
              ".innerText.includes('최대 메모리')",
    # the four live plots, drawn by the page (ui/live_view.js)
    "train": "() => !!document.querySelector('#ld-start') && [...document.querySelectorAll('#ld-train .gtitle')]"
             ".filter(t => /[가-힣]/.test(t.textContent)).length >= 4",
    "review": "() => document.querySelectorAll('#ld-grid img').length >= 12",
    "troubleshoot": "() => !!document.querySelector('#ld-findings')?.innerText.includes('판정')",
}
# Names a Korean page writes in Latin letters (as Korean users and their tools write them), lower case
NAMES = {
    "lora", "doctor", "sd", "sdxl", "unet", "vae", "clip", "cpu", "gpu", "vram", "ram", "cuda", "nan", "inf", "ema",
    "snr", "min", "adamw", "kohya", "rank", "alpha", "lr", "fp", "bf", "px", "mib", "gib", "gb", "mb", "zip", "png",
    "txt", "toml", "json", "safetensors", "diffusers", "id", "cli", "gradio", "english", "wd", "florence", "blip",
    "resnet", "scripts", "reg", "demo",  # sd-scripts; kohya's reg folder; the built-in base model "demo"
    "flux", "turbo", "bitsandbytes", "nf",  # model and library names (Flux.1, SDXL / Z-Image Turbo), NF4
    "siglip",  # the picture judge's model kinds (CLIP, SigLIP)
    "clipseg", "onnx", "onetrainer",  # the mask makers (CLIPSeg, an ONNX background remover); OneTrainer's mask files
}
MODEL_NAMES = {"z-image", "z-image-turbo"}  # a model's name, hyphen and all
VISIBLE_TEXT_JS = """() => {
    const shown = (el) => {
        for (let e = el; e; e = e.parentElement) {
            const s = getComputedStyle(e);
            if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
        }
        const r = el.getBoundingClientRect();
        return r.width > 1 && r.height > 1;  // screen-reader-only text is 1 px
    };
    const texts = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!el || ['SCRIPT', 'STYLE', 'CODE', 'PRE'].includes(el.tagName) || el.closest('pre, code, .cm-editor'))
            continue;  // the config and the command line are the files' own text
        if (n.textContent.trim() && shown(el)) texts.push(n.textContent);
    }
    for (const el of document.querySelectorAll('input, textarea')) {
        if (['checkbox', 'radio', 'file', 'range', 'hidden'].includes(el.type) || !shown(el)) continue;
        texts.push(el.placeholder || '');
        if (el.getAttribute('role') === 'combobox') texts.push(el.value || '');
    }  // a box's own value is what was typed (paths, names, prompts); a dropdown's is a choice the app words
    return texts;
}"""
# Elements whose right edge passes the viewport, except inside a box that scrolls sideways on purpose and fits
OVERFLOW_JS = """() => {
    const vw = document.documentElement.clientWidth;
    const out = [];
    const scroller = (el) => {
        for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
            const s = getComputedStyle(p);
            if (['auto', 'scroll'].includes(s.overflowX) && p.getBoundingClientRect().right <= vw + 1) return true;
        }
        return false;
    };
    for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.width <= 1 || r.height <= 1 || r.right <= vw + 1 || getComputedStyle(el).visibility === 'hidden') continue;
        if (!el.getClientRects().length || scroller(el)) continue;
        out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''} ${(el.innerText || '').slice(0, 40)} `
                 + `(right ${Math.round(r.right)} of ${vw})`);
    }
    return {page: document.scrollingElement.scrollWidth, viewport: vw, elements: out.slice(0, 20)};
}"""
# What its own box cuts off: a gallery's pictures past its right edge (a grid of 8 columns showing 3), a plot's
# title wider than the plot (the dose gauge's, in a half-width column)
CUT_JS = """() => {
    const inside = (el, box) => { const r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
        return r.left >= b.left - 1 && r.right <= b.right + 1; };
    const shown = (el) => el.getClientRects().length > 0;
    const pictures = [...document.querySelectorAll('.grid-wrap')].filter(shown).flatMap(w =>
        [...w.querySelectorAll('.thumbnail-item')].filter(t => !inside(t, w))
            .map(t => 'picture ' + (t.innerText || t.querySelector('img')?.alt || '').trim()));
    const titles = [...document.querySelectorAll('.js-plotly-plot')].filter(shown).flatMap(p =>
        [...p.querySelectorAll('text.gtitle, text.title, .g-xtitle text, .g-ytitle text')]
            .filter(t => t.textContent.trim() && !inside(t, p)).map(t => 'plot title ' + t.textContent));
    return [...pictures, ...titles];
}"""
# A plot's legend over its own words: its title, an axis title, a tick label (the model measures' legend, put under
# the plot area at a fraction of its height, covered the step axis's title on a phone)
OVERLAP_JS = """() => {
    const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const out = [];
    for (const p of [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.getClientRects().length)) {
        const legend = p.querySelector('g.legend');
        if (!legend || !legend.getClientRects().length) continue;
        const box = legend.getBoundingClientRect();
        const words = p.querySelectorAll('text.gtitle, .g-xtitle text, .g-x2title text, .g-ytitle text, '
                                         + '.g-y2title text, .xtick text, .ytick text, .y2tick text');
        for (const t of words)
            if (t.textContent.trim() && hit(box, t.getBoundingClientRect()))
                out.push(`${p.closest('[id^=ld-]')?.id}: legend over '${t.textContent.trim()}'`);
    }
    return out;
}"""
# Every text the Train step's shown plots hold, sampled each frame from before the step is first shown
PLOT_WORDS_JS = """() => {
    window.ldPlotWords = [];
    const look = () => {
        const shown = [...document.querySelectorAll('#ld-train .js-plotly-plot')].filter(p => p.getClientRects().length);
        const words = shown.flatMap(p => [...p.querySelectorAll('text.gtitle, .g-xtitle text, .g-ytitle text, '
                                                                + '.legendtext, .annotation-text')])
            .map(t => t.textContent.trim()).filter(Boolean);
        if (words.length) window.ldPlotWords.push(words.join(' | '));
        window.ldPlotLook = requestAnimationFrame(look);
    };
    look();
}"""
HIDDEN_STEPS_JS = """(keys) => {
    const menu = [...document.querySelectorAll('#ld-wizard .overflow-menu')]
        .filter(m => m.getClientRects().length && !m.classList.contains('hide'));
    const gone = keys.filter(k => { const b = document.querySelector(`#ld-${k}-button`);
        return !b || !b.getClientRects().length || b.getBoundingClientRect().right > document.documentElement.clientWidth; });
    return menu.length ? [...gone, 'an overflow menu'] : gone;
}"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on a workspace holding one finished short run of the demo (samples at steps 0, 2 and 4)."""
    from trainer.train.loop import run_training
    from trainer.train.runner import Runner
    from ui.context import make_context
    from ui.fields import config_from_values
    from ui.testing import running_app

    workspace = tmp_path_factory.mktemp("ws")
    ctx = make_context(workspace, runner=Runner())
    cfg = config_from_values(dict(ctx.defaults), ctx.runs_dir, [ctx.presets_dir])
    cfg.train.max_steps, cfg.save.every_steps, cfg.sample.steps = 4, 2, 2
    result = run_training(cfg)
    assert result.status == "finished", result
    with running_app(workspace) as running:
        yield running


@pytest.fixture(scope="module")
def fresh_app(tmp_path_factory):
    """The app on a workspace that has never trained."""
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("fresh")) as running:
        yield running


def data_words(workspace: Path, prompts: str) -> set[str]:
    """The dataset's own words (its captions) and the sample prompts: what the user wrote, shown as written."""
    text = prompts + " ".join(p.read_text(encoding="utf-8") for p in (workspace / "datasets").rglob("*.txt"))
    return {w.lower() for w in re.findall(r"[A-Za-z]+", text)}


def english_words(texts: list[str], allowed: set[str]) -> set[str]:
    """English words left in ``texts``: a run of Latin letters that is not a name, nor part of a number, unit,
    file name, path or config key (a chunk holding a digit, "_", "." or "/")."""
    left = set()
    for text in texts:
        for chunk in re.findall(r"[A-Za-z0-9_./\\:+'’-]+", text):
            if re.search(r"[0-9_./\\]", chunk.strip(".:'’-")) or chunk.strip(".:'’-").lower() in MODEL_NAMES:
                continue
            # one letter is a symbol (N pictures, runs A and B)
            left |= {w for w in re.findall(r"[A-Za-z]{2,}", chunk) if w.lower() not in allowed}
    return left


def open_step(page, key: str) -> None:
    page.locator(f"#ld-{key}-button").click()
    page.wait_for_function(READY[key])
    for _ in range(8):  # every closed accordion of the step, opened (the upload boxes, the advanced settings, …)
        closed = page.locator(f"#ld-{key} button.label-wrap:not(.open)")
        if not closed.count():
            break
        closed.first.click()
        page.wait_for_timeout(300)
    page.wait_for_timeout(1500)  # plots and tables settle


def test_before_the_first_run_a_line_says_why_review_and_troubleshoot_are_grey(browser, fresh_app):  # noqa: F811
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(fresh_app.url + "?lang=ko")
        page.wait_for_function(READY["dataset"])
        assert page.locator("#ld-review-button").is_disabled()
        assert page.locator("#ld-troubleshoot-button").is_disabled()
        page.wait_for_function("() => document.querySelector('#ld-locked-hint').innerText"
                               ".includes('검토와 문제 해결 단계는 첫 학습을 시작하면 열립니다')")
        assert not page.evaluate(HIDDEN_STEPS_JS, list(STEPS))
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "phone-0-before-the-first-run.png"))
        page.get_by_text("English", exact=True).click()
        page.wait_for_function("() => document.querySelector('#ld-locked-hint').innerText.includes("
                               "'Review and Troubleshoot open once your first run has started')")
    finally:
        context.close()


@pytest.mark.parametrize(("prefix", "width", "height"), [("ko", 1400, 1000), ("phone", 390, 844)])
def test_every_step_in_korean_leaves_no_english_and_nothing_cut_off(browser, app, prefix, width, height):  # noqa: F811
    allowed = NAMES | data_words(app.ctx.workspace, app.ctx.defaults["sample_prompts"])
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(90_000)
    problems: dict[str, object] = {}
    try:
        page.goto(app.url + "?lang=ko")
        page.wait_for_function(READY["dataset"])
        page.wait_for_function("() => document.documentElement.lang === 'ko'")  # gradio's own words follow
        assert not page.locator("#ld-locked-hint").is_visible()  # the workspace holds a run
        ARTIFACTS.mkdir(exist_ok=True)
        for i, key in enumerate(STEPS, 1):
            hidden = page.evaluate(HIDDEN_STEPS_JS, list(STEPS))
            if hidden:
                problems[f"{key}: steps off the tab bar"] = hidden
            open_step(page, key)
            page.screenshot(path=str(ARTIFACTS / f"{prefix}-{i}-{key}.png"), full_page=True)
            english = english_words(page.evaluate(VISIBLE_TEXT_JS), allowed)
            for _ in range(10):  # a loaded machine may still be putting a step's words into Korean: let it finish
                if not english:
                    break
                page.wait_for_timeout(1500)
                english = english_words(page.evaluate(VISIBLE_TEXT_JS), allowed)
            if english:
                problems[f"{key}: English"] = sorted(english)
            wide = page.evaluate(OVERFLOW_JS)
            if wide["page"] > wide["viewport"] or wide["elements"]:
                problems[f"{key}: wider than the screen"] = wide
            cut = page.evaluate(CUT_JS)
            if cut:
                problems[f"{key}: cut off by its own box"] = cut[:5]
            covered = page.evaluate(OVERLAP_JS)
            if covered:
                problems[f"{key}: a legend over a plot's words"] = covered[:5]
            if key == "review" and not page.locator("#ld-model-measures .js-plotly-plot g.legend").count():
                problems["review: no model measures chart to look at"] = True
        assert not problems, problems
    finally:
        context.close()


def test_the_live_plots_are_korean_from_the_first_frame_they_show(browser, app):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(app.url + "?lang=ko")
        page.wait_for_function(READY["dataset"])
        page.evaluate(PLOT_WORDS_JS)
        page.locator("#ld-train-button").click()
        page.wait_for_function(READY["train"])
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "ko-4-train-first-draw.png"))  # as they first show
        page.wait_for_timeout(4_000)  # past the throttle: a redraw in the page's own time
        seen = page.evaluate("() => { cancelAnimationFrame(window.ldPlotLook); return window.ldPlotWords; }")
        assert seen and any("손실" in words for words in seen), seen[:3]
        english = {words: sorted(left) for words in dict.fromkeys(seen) if (left := english_words([words], NAMES))}
        assert not english, english  # gradio's placeholder was drawn in English until the page's first redraw
    finally:
        context.close()
