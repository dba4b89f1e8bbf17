"""Captioning in a real headless Chromium: upload a zip of bare pictures, caption them with a tiny WD14 tagger,
edit one caption by hand, undo the edit and then the captioner's run, and scan: the folder is bare again.
Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import zipfile

from PIL import Image

from tests.test_browser import (  # noqa: F401  (the app and browser fixtures, one of each for this module)
    ARTIFACTS,
    CHROMIUM,
    app,
    browser,
    button,
    pytestmark,
    set_field,
    shot,
    sync_api,
    upload,
    wait_text,
)


def test_upload_bare_pictures_caption_edit_undo_and_scan(browser, app, tmp_path):  # noqa: F811 (the imported fixtures)
    from trainer.caption.tiny import build_tiny_captioner

    tagger = build_tiny_captioner("tagger", tmp_path / "tagger")
    archive = tmp_path / "bare.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(4):
            Image.new("RGB", (64, 64), (50 * i, 120, 200 - 40 * i)).save(tmp_path / f"{i}.png")
            z.write(tmp_path / f"{i}.png", f"pic_{i}.png")
    folder = app.ctx.workspace / "datasets" / "bare"

    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(app.url)
        page.wait_for_function("() => document.body.innerText.includes('usable pictures')")
        page.get_by_text("Upload pictures or a zip").click()
        upload(page, "#ld-upload", archive)
        page.get_by_label("Dataset name (a folder in the workspace)").fill("bare")
        button(page, "Upload into the workspace").click()
        wait_text(page, "#ld-dataset", r"4 files copied")
        set_field(page, "trigger", "zxc")

        page.get_by_text("Caption the pictures").click()
        captioner = page.locator("#ld-f-captioner input").first
        captioner.click()
        page.get_by_role("option", name="tagger (WD14)", exact=True).click()
        set_field(page, "caption_model", str(tagger))
        set_field(page, "caption_general", "0.2")
        button(page, "Caption all").click()
        wait_text(page, "#ld-cap-msg", r"4 captions written")
        shot(page, "caption-1-captioned")
        captioned = {p.name: p.read_bytes() for p in folder.glob("*.txt")}
        assert len(captioned) == 4 and all(b.startswith(b"zxc, ") for b in captioned.values())

        page.locator("#ld-thumbs img").nth(0).click()
        page.wait_for_function("() => document.querySelector('#ld-cap-file textarea, #ld-cap-file input').value"
                               " === 'pic_0.png'")
        page.locator("#ld-cap-text textarea, #ld-cap-text input").first.fill("zxc, edited by hand")
        button(page, "Save caption").click()
        wait_text(page, "#ld-dataset", r"Caption of pic_0.png saved")
        assert (folder / "pic_0.txt").read_text(encoding="utf-8") == "zxc, edited by hand\n"

        button(page, "Undo last change").click()
        wait_text(page, "#ld-cap-msg", r"undone: caption of pic_0.png edited")
        assert (folder / "pic_0.txt").read_bytes() == captioned["pic_0.txt"]
        button(page, "Undo last change").click()
        wait_text(page, "#ld-cap-msg", r"undone: WD14 tagger .* captions")
        assert not list(folder.glob("*.txt"))

        button(page, "Scan").click()
        wait_text(page, "#ld-dataset", r"4 usable pictures, 0 with captions")
        shot(page, "caption-2-undone")
    finally:
        context.close()
