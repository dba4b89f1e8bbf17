"""The whole wizard through gradio_client on the tiny model: scan → plan → preset → start → poll to the end →
review grid → troubleshoot findings → a run with one change, recorded in the journal. A second client sees
the running job and its Start is refused."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from trainer.config.presets import preset_config

pytestmark = pytest.mark.slow

gradio_client = pytest.importorskip("gradio_client")

SHORT = {"max_steps": 4, "save_every": 2, "sample_every": 0, "sample_steps": 2, "batch_size": 2}


class Api:
    """Calls an endpoint by name and returns its outputs by component name."""

    def __init__(self, app, client):
        self.app, self.client = app, client

    def __call__(self, name: str, **kwargs: Any) -> dict[str, Any]:
        from ui.testing import call

        return call(self.client, self.app.ctx, name, **kwargs)

    def wait(self, timeout: float = 300.0) -> dict[str, Any]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            status = self.client.predict(api_name="/status")
            if not status["active"] and status["status"] not in ("idle", "starting"):
                return status
            time.sleep(0.5)
        raise AssertionError(f"the run did not end in {timeout}s: {status}")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("ws")) as running:
        yield running


@pytest.fixture(scope="module")
def api(app):
    return Api(app, gradio_client.Client(app.url, verbose=False))


PUBLIC = {"/scan", "/import_dataset", "/save_caption", "/plan", "/preset", "/save_preset", "/write_config", "/start",
          "/stop", "/sample_now", "/save_now", "/poll", "/status", "/review", "/sweep", "/more_pictures", "/read_with_judge", "/download", "/troubleshoot",
          "/symptom", "/start_change", "/memory", "/fit_memory", "/pause", "/continue", "/continue_chosen", "/compare",
          "/caption_preview", "/caption_all", "/caption_undo", "/caption_frequency", "/caption_replace",
          "/caption_remove", "/caption_insert_trigger", "/caption_find", "/mask_preview", "/mask_all", "/mask_undo"}


def test_only_the_named_handlers_are_in_the_api(api):
    info = api.client.view_api(return_format="dict", print_info=False)
    assert set(info["named_endpoints"]) == PUBLIC
    assert not info["unnamed_endpoints"]


def test_the_demo_dataset_is_there_and_scans(app, api):
    demo = app.ctx.workspace / "datasets" / "demo-zxc"
    assert (demo / "demo_manifest.json").is_file()
    out = api("scan")
    assert "**20** usable pictures" in out["ds_summary"]
    assert "**30** prior images" in out["ds_summary"]  # the demo's world scenes (dataset.reg_path)
    assert out["reg_path"] == str(app.ctx.workspace / "datasets" / "demo-world")
    assert out["dataset_path"] == str(demo)
    assert "error" not in out["ds_msg"].lower()
    assert out["ds_size_hist"]["type"] == "plotly"


def test_another_dataset_leaves_the_demos_prior_and_held_out_folders_behind(app, api):
    import shutil

    datasets = app.ctx.workspace / "datasets"
    assert api("scan")["val_path"] == str(datasets / "demo-zxc-held-out")  # the demo scores its own held-out pictures
    mine = datasets / "mine" / "5_cat"
    mine.mkdir(parents=True)
    for i in range(4):
        shutil.copy(datasets / "demo-zxc" / "10_zxc" / f"zxc_{i:03d}.png", mine / f"cat_{i}.png")
        (mine / f"cat_{i}.txt").write_text("cat, sitting")
    out = api("scan", dataset_path=str(mine.parent))
    assert (out["reg_path"], out["val_path"]) == ("", "")
    assert "prior images (its world scenes) were taken out" in out["ds_msg"]
    assert "held-out pictures were taken out of 'Validation pictures folder'" in out["ds_msg"]
    assert "**4** usable pictures" in out["ds_summary"]


def test_start_asks_before_writing_over_another_datasets_config(app, api):
    import shutil

    from trainer.config.schema import load_config, save_config

    datasets, configs = app.ctx.workspace / "datasets", app.ctx.configs_dir
    theirs = configs / "theirs.toml"
    cfg = load_config(None, [f"dataset.path={json.dumps(str(datasets / 'demo-zxc'))}"])
    save_config(cfg, theirs)
    before = theirs.read_bytes()
    mine = datasets / "clashing" / "5_dog"
    mine.mkdir(parents=True)
    for i in range(3):
        shutil.copy(datasets / "demo-zxc" / "10_zxc" / f"zxc_{i:03d}.png", mine / f"dog_{i}.png")
        (mine / f"dog_{i}.txt").write_text("dog, sitting")
    out = api("start", dataset_path=str(mine.parent), run_name="theirs")
    assert "configs/theirs.toml" in out["train_msg"] and "Start anyway" in out["train_msg"]
    assert theirs.read_bytes() == before  # nothing written, nothing started
    assert not api.client.predict(api_name="/status")["active"]


def test_the_picture_judge_is_checked_at_start_and_kept_through_a_preset(app, api, tmp_path):
    from trainer.models.tiny import save_tiny_clip_judge

    out = api("start", judge=str(tmp_path / "no-clip-here"))
    assert "ld-error" in out["train_msg"] and "measure.judge" in out["train_msg"] and "no-clip-here" in out["train_msg"]
    assert not api.client.predict(api_name="/status")["active"]
    judge = save_tiny_clip_judge(tmp_path / "clip")
    assert api("preset", preset="demo-character", judge=str(judge))["judge"] == str(judge)  # a preset keeps it
    # a judge that is one passes the check: Start goes on to its next question (another dataset's config here)
    from trainer.config.schema import load_config, save_config

    datasets = app.ctx.workspace / "datasets"
    save_config(load_config(None, [f"dataset.path={json.dumps(str(tmp_path / 'elsewhere'))}"]),
                app.ctx.configs_dir / "judged.toml")
    out = api("start", judge=str(judge), dataset_path=str(datasets / "demo-zxc"), run_name="judged")
    assert "Start anyway" in out["train_msg"] and "measure.judge" not in out["train_msg"]
    assert not api.client.predict(api_name="/status")["active"]


def test_plan_fills_in_the_formula_and_the_dose(api):
    out = api("plan", **SHORT)
    assert "max_steps = 4" in out["plan_formula"]
    assert "Bucket-aware total: **4**" in out["plan_formula"]
    assert "dose" in out["dose_md"].lower()
    assert out["dose_plot"]["type"] == "plotly"
    assert "python -m trainer train" in out["cli_cmd"]
    assert 'preset = "demo-character"' in out["config_toml"]


def test_a_preset_sets_the_fields_but_keeps_the_dataset(app, api):
    out = api("preset", preset="sd15-character")
    assert out["lr"] == pytest.approx(1e-4) and out["resolution"] == 512
    assert out["dataset_path"] == app.ctx.defaults["dataset_path"]
    back = api("preset", preset="demo-character")
    assert back["resolution"] == 64 and back["preset"] == "demo-character"


def test_a_path_outside_the_workspace_is_fine_locally_but_a_missing_one_is_a_message(api, tmp_path):
    out = api("scan", dataset_path=str(tmp_path / "nowhere"))
    assert "ld-error" in out["ds_msg"] and "nowhere" in out["ds_msg"]


def test_a_caption_edit_writes_its_txt_and_stays_inside_the_dataset(app, api):
    api("scan")
    txt = app.ctx.workspace / "datasets" / "demo-zxc" / "10_zxc" / "zxc_001.txt"
    out = api("save_caption", cap_file="10_zxc/zxc_001.png", cap_text="zxc, wearing a red hat, on sky ")
    assert txt.read_text(encoding="utf-8") == "zxc, wearing a red hat, on sky\n"
    assert "Caption of 10_zxc/zxc_001.png saved" in out["ds_msg"]
    bad = api("save_caption", cap_file="../../../../outside.png", cap_text="x")
    assert "is not a picture of the scanned dataset" in bad["ds_msg"]


def test_an_uploaded_zip_becomes_a_dataset_in_the_workspace(app, api, tmp_path):
    import zipfile

    from gradio_client import handle_file
    from PIL import Image

    archive = tmp_path / "cats.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(4):
            buf = tmp_path / f"{i}.png"
            Image.new("RGB", (64, 64), (40 * i, 90, 200)).save(buf)
            z.write(buf, f"5_cat/{i}.png")
            z.writestr(f"5_cat/{i}.txt", f"cat, pose {i}")
        z.writestr("../evil.png", b"x")
    out = api("import_dataset", upload_files=[handle_file(str(archive))], upload_name="my cats", trigger="cat")
    dest = app.ctx.workspace / "datasets" / "my cats"
    assert out["dataset_path"] == str(dest)
    assert "**4** usable pictures" in out["ds_summary"] and "20 pictures × repeats" not in out["ds_summary"]
    # the demo's prior images belong to the demo character: they do not follow the user to their own dataset
    assert out["reg_path"] == "" and "prior images" not in out["ds_summary"]
    assert "taken out of 'Prior images folder'" in out["ds_msg"]
    assert "8 files copied" in out["ds_msg"] and "(1 skipped)" in out["ds_msg"]
    assert not (app.ctx.workspace / "datasets" / "evil.png").exists()


def test_user_presets_save_load_and_only_by_name(app, api):
    saved = api("save_preset", user_preset_name="my style", lr=3e-4, rank=4)
    path = app.ctx.presets_dir / "my style.toml"
    assert path.is_file() and saved["preset"] == "my style"
    assert "dataset" not in path.read_text() or "path" not in path.read_text()
    loaded = api("preset", preset="my style")
    assert loaded["lr"] == pytest.approx(3e-4) and loaded["rank"] == 4
    with pytest.raises(gradio_client.exceptions.AppError, match="not in the list of choices"):
        api("preset", preset=str(path))  # a file path is not a preset (ui.fields refuses it too)
    from trainer.config.presets import load_preset

    assert load_preset(str(path)).subject == "character"
    api("save_preset", user_preset_name="my sd15 style", preset="sd15-style")  # a style stays one for the doctor
    assert load_preset(str(app.ctx.presets_dir / "my sd15 style.toml")).subject == "style"
    builtin = api("save_preset", user_preset_name="demo-character")
    assert "built-in preset" in builtin["preset_msg"]
    written = api("write_config", run_name="cfgtest", lr=2e-4)
    from trainer.config.schema import load_config

    assert load_config(app.ctx.configs_dir / "cfgtest.toml").optim.lr == pytest.approx(2e-4)
    assert "cfgtest.toml" in written["preset_msg"]


def test_train_review_troubleshoot_and_one_change(app, api):
    started = api("start", **SHORT)
    assert "started" in started["train_msg"].lower(), started
    # a second client (another tab) sees the running job and cannot start another
    other = Api(app, gradio_client.Client(app.url, verbose=False))
    assert other.client.predict(api_name="/status")["active"]
    refused = other("start", **SHORT)
    assert "already active" in refused["train_msg"]
    polled = other("poll")
    assert "running" in polled["status_md"] or "starting" in polled["status_md"]

    status = api.wait()
    assert status["status"] == "finished", status
    assert status["rows"] == 4 and status["checkpoints"] >= 2
    run = status["run"]
    assert (app.ctx.runs_dir / run / "final" / "lora.safetensors").is_file()

    review = api("review", review_run=run)
    grid = review["grid_html"]
    assert grid.count("<tr") == 1 + 3  # header + steps 0, 2, 4
    for kind in ("trigger only", "unseen pose", "other outfit", "no trigger"):
        assert kind in grid
    assert grid.count("<img") == 12
    assert "Recommended" in review["rec_md"]
    assert review["ckpt"].endswith("lora.safetensors")

    sweep = api("sweep", review_run=run, ckpt=review["ckpt"])
    assert len(sweep["sweep_gallery"]) == 16 and "16 pictures" in sweep["review_msg"]
    assert (app.ctx.runs_dir / run / "review").is_dir()
    more = api("more_pictures", review_run=run, ckpt=review["ckpt"])  # the run's own seeds first, then new ones
    assert len(more["more_gallery"]) == 4 * 12 and "12 pictures a prompt" in more["review_msg"]
    captions = [g["caption"] for g in more["more_gallery"]]
    assert "seed 1234" in captions[0] and "seed 1245" in captions[11] and "seed 1234" in captions[12]
    assert "picture judge (demo)" in more["review_msg"] and "likeness" in more["review_msg"], more["review_msg"]
    # the judge's reading of the larger draw now stands for that save: the view is read again with it
    assert "The verdict now reads this save by them" in more["review_msg"]
    assert "(12 a prompt)" in json.dumps(more["leak_df"]) and more["ckpt"] == review["ckpt"]

    download = api("download", review_run=run, ckpt=review["ckpt"])
    assert Path(download["download_file"]).stat().st_size > 0
    # the demo preset trains the trigger embedding: it comes with the LoRA, named as UIs name embeddings
    import zipfile

    with zipfile.ZipFile(download["download_file"]) as z:
        names = z.namelist()
    assert "zxc.safetensors" in names and any(n.endswith("lora.safetensors") for n in names)
    assert "zxc.safetensors" in download["review_msg"]

    # a picture judge chosen after the run trained: none chosen under Preset is a message; one chosen reads the run
    # (kept in its folder) until the button is pressed with none again
    from trainer.doctor.judge_files import chosen_judge
    from trainer.models.tiny import save_tiny_clip_judge

    refused = api("read_with_judge", review_run=run, judge="")
    assert "Choose a picture judge first" in refused["review_msg"]
    clip = save_tiny_clip_judge(app.ctx.workspace / "models" / "clip")
    judged = api("read_with_judge", review_run=run, judge=str(clip))
    # on the demo character the demo's own measures are the stronger judge: the message says whose readings stand
    assert "a stronger judge reads it (demo" in judged["review_msg"] and "Recommended" in judged["rec_md"]
    assert chosen_judge(app.ctx.runs_dir / run) == str(clip)
    back = api("read_with_judge", review_run=run, judge="")
    assert "as it trained" in back["review_msg"] and chosen_judge(app.ctx.runs_dir / run) == ""

    findings = api("troubleshoot", ts_run=run, symptom=None)
    assert "Findings for this run" in findings["findings_md"]
    assert "Observed" in findings["findings_md"]

    changed = api("start_change", ts_run=run, rx="lower_lr")
    assert "one change" in changed["ts_msg"] and "optim.lr" in changed["ts_msg"], changed
    second = api.wait()
    assert second["status"] == "finished" and second["run"] != run

    journal = api("troubleshoot", ts_run=second["run"], symptom=None)["journal_df"]
    rows = {r[0]: r for r in journal["data"]}
    child = rows[second["run"]]
    assert child[1] == run
    lr = preset_config("demo-character").optim.lr
    assert child[2].startswith(f"optim.lr: {lr:g} → {lr / 2:g}")  # lower_lr halves the preset's lr
    assert child[3] == "finished"
    assert child[4].startswith("step ")


def test_a_judge_whose_model_does_not_load_is_one_message_in_review_and_troubleshoot(app, api, tmp_path):
    """A user's run (not the demo character) and a judge whose files pass the check but whose model does not
    load: Review's button says so and keeps nothing; a run trained with it is reviewed and diagnosed all the same,
    Troubleshoot naming the judge."""
    import shutil

    from tests.test_review import _world, fake_run
    from tests.test_verdict import _character, _set_config
    from trainer.doctor.judge_files import chosen_judge
    from trainer.models.tiny import save_tiny_clip_judge

    data = tmp_path / "data" / "1_mine"
    data.mkdir(parents=True)
    _character().save(data / "0.png")
    made = fake_run(tmp_path, [10, 20], lambda step, kind: _character() if step == 20 and kind != "no_trigger" else _world())
    run = app.ctx.runs_dir / "mine" / made.name
    shutil.copytree(made, run)
    name = app.ctx.run_rel(run)
    broken = save_tiny_clip_judge(app.ctx.workspace / "models" / "cut-short")
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(weights.read_bytes()[:64])

    out = api("read_with_judge", review_run=name, judge=str(broken))
    assert "could not be loaded" in out["review_msg"] and "It was not kept" in out["review_msg"], out["review_msg"]
    assert chosen_judge(run) == ""
    _set_config(run, measure={"judge": str(broken)})  # trained with it
    view = api("review", review_run=name)
    assert "ld-error" not in view["review_msg"] and "<img" in view["grid_html"]
    findings = api("troubleshoot", ts_run=name, symptom=None)["findings_md"]
    assert "no picture judge read the pictures" in findings and "cut-short" in findings, findings
