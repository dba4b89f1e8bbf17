"""One's own pictures, end to end in a real headless Chromium: a zip of 12 small pictures captioned "qwe, on a red
background" uploaded on the Dataset step replaces the demo everywhere. The trigger "qwe" is proposed and the scan
warns of nothing about it, the sample prompts and the run name are made for it (a name whose config holds the
demo's settings is passed over, so Start writes over nothing), a reload keeps every input, a short run on the tiny
model trains, and Review's columns read as the prompts' real kinds. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import io
import zipfile

import pytest
from PIL import Image

from tests.test_browser import (  # noqa: F401 (pytestmark: the same marks; browser: the same Chromium)
    browser,
    button,
    pytestmark,
    set_field,
    shot,
    upload,
    wait_text,
    wait_until_ended,
)

CAPTION = "qwe, on a red background"
KIND_HEADERS = ("trigger only", "trigger + unseen pose/background", "trigger + other outfit", "no trigger")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app on a fresh workspace where ``configs/my-pictures.toml`` already holds the demo's settings."""
    from tests.helpers import tiny_config
    from trainer.config.schema import save_config
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("ws")) as running:
        ws = running.ctx.workspace
        save_config(tiny_config(ws / "datasets" / "demo-zxc", ws / "runs"), ws / "configs" / "my-pictures.toml")
        yield running


def own_zip(path) -> str:
    """12 small pictures of one's own (each a little different: no duplicates), each with its caption."""
    with zipfile.ZipFile(path, "w") as z:
        for i in range(12):
            buf = io.BytesIO()
            im = Image.new("RGB", (64, 64), (210, 30, 30))
            im.paste((240 - 15 * i, 220, 20 * i), (8 + 2 * i, 16, 40 + 2 * i, 48))
            im.save(buf, format="PNG")
            z.writestr(f"pictures/qwe_{i:02d}.png", buf.getvalue())
            z.writestr(f"pictures/qwe_{i:02d}.txt", CAPTION)
    return str(path)


def field_value(page, name: str) -> str:
    return page.locator(f"#ld-f-{name} input, #ld-f-{name} textarea").first.input_value()


def open_tab(page, key: str) -> None:
    page.locator(f"#ld-{key}-button").click()
    page.wait_for_selector(f"#ld-{key}", state="visible")


def test_ones_own_pictures_replace_the_demo_everywhere(browser, app, tmp_path):  # noqa: F811 (the fixture)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        page.goto(app.url)
        page.wait_for_function("() => document.body.innerText.includes('usable pictures')")  # the demo, scanned
        assert field_value(page, "trigger") == "zxc"

        # upload the zip into the workspace as "my-pictures" and scan it
        page.get_by_text("Upload pictures or a zip").click()
        upload(page, "#ld-upload", own_zip(tmp_path / "mine.zip"))
        name = page.get_by_label("Dataset name (a folder in the workspace)")
        name.fill("my-pictures")
        button(page, "Upload into the workspace").click()
        wait_text(page, "body", 'The captions open with "qwe" \\(12 of 12\\)')
        message = page.locator(".ld-ok").first.inner_text()
        assert "Run name: my-pictures-2" in message  # configs/my-pictures.toml holds the demo's settings
        assert field_value(page, "trigger") == "qwe"
        assert field_value(page, "dataset_path").endswith("datasets/my-pictures")
        body = page.locator("#ld-dataset").inner_text()
        assert "12 usable pictures" in " ".join(body.split())
        assert "lacks the trigger" not in body and 'tag "qwe"' not in body
        shot(page, "own-1-dataset")

        # the Steps page: three repeats (the pictures sit in no N_ folder), then the run name and prompts
        open_tab(page, "plan")
        set_field(page, "repeats", "3")
        wait_text(page, "#ld-plan", "36 image-repeats")  # 12 pictures × 3 repeats
        open_tab(page, "preset")
        page.get_by_text("Advanced settings", exact=True).click()
        prompts = field_value(page, "sample_prompts").splitlines()
        assert prompts[0] == "qwe" and prompts[3] == "on a red background"
        assert all(p.startswith("qwe, ") for p in prompts[1:3]) and "zxc" not in "\n".join(prompts)
        assert field_value(page, "run_name") == "my-pictures-2"

        # a reload keeps every input, and the scan of the kept folder runs again
        page.reload()
        page.wait_for_function("() => document.body.innerText.includes('usable pictures')")
        wait_text(page, "#ld-dataset", "12\\s*usable pictures")
        assert field_value(page, "trigger") == "qwe"
        assert field_value(page, "dataset_path").endswith("datasets/my-pictures")
        open_tab(page, "plan")
        assert field_value(page, "repeats") == "3"
        set_field(page, "max_steps", "4")
        set_field(page, "save_every", "2")
        open_tab(page, "preset")
        assert field_value(page, "run_name") == "my-pictures-2"
        page.get_by_text("Advanced settings", exact=True).click()
        assert field_value(page, "sample_prompts").splitlines() == prompts
        set_field(page, "sample_steps", "2")
        set_field(page, "images_per_prompt", "1")
        page.wait_for_timeout(800)
        shot(page, "own-3-preset")

        # a short run on the tiny model
        button(page, "Next: train →").click()
        page.wait_for_selector("#ld-start")
        button(page, "Start").click()
        page.wait_for_function("() => /Training started|Start anyway/.test(document.body.innerText)")
        if page.locator("#ld-confirm").is_visible():
            button(page, "Start anyway").click()
        assert "finished" in wait_until_ended(page, 300)
        configs = app.ctx.workspace / "configs"
        assert "demo-zxc" in (configs / "my-pictures.toml").read_text(encoding="utf-8")  # left as it was
        written = (configs / "my-pictures-2.toml").read_text(encoding="utf-8")
        assert "my-pictures" in written and 'trigger = "qwe"' in written
        shot(page, "own-4-train")

        # Review: the columns read as the prompts' real kinds, each with its prompt
        button(page, "Next: review →").click()
        page.wait_for_function("() => document.querySelectorAll('#ld-grid img').length >= 8")
        heads = page.locator("#ld-grid thead th").all_inner_texts()[1:]
        assert [h.splitlines()[0] for h in heads] == list(KIND_HEADERS)
        assert [h.splitlines()[1] for h in heads] == prompts
        assert "#" not in " ".join(heads) and "zxc" not in " ".join(heads)
        shot(page, "own-5-review")
    finally:
        context.close()
