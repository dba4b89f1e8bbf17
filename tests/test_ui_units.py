"""UI pieces that need no server: the field table, the plots, the path policy, uploads, security, words."""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from pathlib import Path

import pytest

from tests.helpers import snapshot_of
from trainer.config.presets import preset_config
from trainer.config.schema import Config
from trainer.errors import UserError
from trainer.run.events import StepRow
from ui import live, plots
from ui.fields import BY_NAME, FIELDS, config_from_values, values_from_config
from ui.i18n import TEXTS, t
from ui.paths import PathPolicy, import_uploads, is_loopback, safe_name
from ui.security import HideApiInfo, decide_security

UI_DIR = Path(__file__).resolve().parent.parent / "ui"


# ------------------------------------------------------------------------------------------- fields


def test_every_field_names_a_real_config_key_once():
    cfg = Config()
    assert len({f.name for f in FIELDS}) == len(FIELDS)
    assert len({f.path for f in FIELDS}) == len(FIELDS)
    for f in FIELDS:
        cfg.get(f.path)  # AttributeError for a path that is not in the config


def test_values_round_trip_through_the_table(tmp_path):
    cfg = preset_config("sd15-style")
    cfg.dataset.path = "/data/x"
    cfg.sample.prompts = ["zxc", "a cat"]
    values = values_from_config(cfg)
    assert values["sample_prompts"] == "zxc\na cat"
    back = config_from_values(values, tmp_path / "runs")
    assert back.preset == "sd15-style"
    assert back.save.output_dir == str(tmp_path / "runs")
    back.save.output_dir = cfg.save.output_dir
    assert back.to_dict() == cfg.to_dict()


def test_a_changed_field_lands_on_its_own_key_only(tmp_path):
    preset = preset_config("demo-character")
    values = values_from_config(preset)
    values["lr"] = 5e-4
    values["max_steps"] = 12.0  # gradio numbers arrive as floats
    cfg = config_from_values(values, tmp_path)
    assert cfg.optim.lr == 5e-4 and cfg.train.max_steps == 12 and isinstance(cfg.train.max_steps, int)
    # from the preset, not the defaults (no widget for the dose zone)
    assert cfg.dose.fit_high == preset.dose.fit_high != Config().dose.fit_high
    assert (cfg.lora.rank, cfg.lora.targets) == (preset.lora.rank, preset.lora.targets)


def test_an_out_of_range_field_is_a_user_error_naming_the_key(tmp_path):
    values = values_from_config(Config())
    values["rank"] = 0
    with pytest.raises(UserError, match=r"lora\.rank"):
        config_from_values(values, tmp_path)
    values["rank"] = None
    with pytest.raises(UserError, match=r"lora\.rank"):
        config_from_values(values, tmp_path)


def test_a_preset_is_named_never_a_file(tmp_path):
    for bad in ("/etc/some.toml", "../presets/x", "x.toml", "C:evil"):
        with pytest.raises(UserError, match="not a preset name"):
            config_from_values({"preset": bad}, tmp_path)


# -------------------------------------------------------------------------------------------- plots


def _rows(n: int, bad: dict[int, str] | None = None, scale: bool = False) -> list[StepRow]:
    rows = []
    for i in range(1, n + 1):
        kind = (bad or {}).get(i)
        rows.append(StepRow(step=i, loss=math.nan if kind else 1.0 / i + 0.01 * math.sin(i),
                            grad_norm=math.inf if kind == "grad" else 2.0 + math.sin(i), grad_norm_clipped=1.0,
                            lr=1e-4, loss_scale=2.0 ** (16 - (i // 100)) if scale else None,
                            skipped=bool(kind) and scale, nonfinite=kind))
    return rows


def test_decimation_keeps_at_most_a_thousand_points_and_every_kept_index():
    xs = list(range(100_000))
    ys = [math.sin(x / 50.0) for x in xs]
    ys[77_777] = 50.0  # a spike must survive as its bucket's maximum
    keep = [12_345, 99_998]
    dx, dy = plots.decimate(xs, ys, keep=keep)
    assert len(dx) <= plots.MAX_POINTS
    assert {12_345, 99_998, 0, 99_999} <= set(dx)
    assert 50.0 in dy
    assert dx == sorted(dx)


def test_smoothing_passes_over_non_finite_values():
    sm = plots.smooth([1.0, math.nan, 1.0, math.inf, 1.0])
    assert all(abs(v - 1.0) < 1e-9 for v in sm)
    assert math.isnan(plots.smooth([math.nan])[0])


def test_loss_figure_marks_non_finite_steps_with_their_own_trace_and_keeps_zoom():
    rows = _rows(5000, bad={4321: "grad"})
    raw = plots.loss_figure(rows, "en", uirevision="run-1")
    json.dumps(raw, allow_nan=False)  # what goes to the browser as it is: plain JSON, NaN as null
    fig = plots.as_figure(raw)
    names = [tr.name for tr in fig.data]
    assert names == ["loss", "smoothed (EMA)", "non-finite"]
    assert all(len(tr.x) <= plots.MAX_POINTS for tr in fig.data)
    assert 4321 in fig.data[0].x  # the gap is kept
    gap = list(fig.data[0].x).index(4321)
    assert fig.data[0].y[gap] is None
    assert list(fig.data[2].x) == [4321] and math.isfinite(fig.data[2].y[0])
    assert fig.layout.uirevision == "run-1"
    assert any(s.type == "line" and s.x0 == 4321 for s in fig.layout.shapes)


def test_grad_figure_has_before_after_and_the_max_norm_line():
    fig = plots.as_figure(plots.grad_figure(_rows(50), max_norm=1.0, lang="ko"))
    assert [tr.name for tr in fig.data] == ["클리핑 전", "클리핑 후"]
    assert any(s.y0 == 1.0 for s in fig.layout.shapes)
    assert fig.layout.yaxis.type == "log"


def test_scale_figure_marks_skipped_steps_and_says_when_there_is_no_scaler():
    rows = _rows(300, bad={150: "grad"}, scale=True)
    fig = plots.as_figure(plots.scale_figure(rows, "en"))
    skipped = [tr for tr in fig.data if tr.name == "skipped step"]
    assert skipped and list(skipped[0].x) == [150]
    plain = plots.as_figure(plots.scale_figure(_rows(10), "en"))
    assert not plain.data and "only with fp16" in plain.layout.annotations[0].text


def test_figures_of_no_rows_say_so():
    for raw in (plots.loss_figure([], "en"), plots.lr_figure([], "en"), plots.grad_figure([], 1.0, "en")):
        fig = plots.as_figure(raw)
        assert not fig.data and fig.layout.annotations[0].text == "no steps yet"


def test_metric_values_from_json_files_are_read():
    assert math.isnan(plots.value("nan")) and plots.value("inf") == math.inf and plots.value(None) != 0
    fig = plots.as_figure(plots.loss_figure([StepRow.parse({"step": 1, "loss": "nan", "nonfinite": "loss"}),
                                             StepRow.parse({"step": 2, "loss": 0.5})], "en"))
    assert fig.data[0].y == (None, 0.5)


def test_dose_gauge_has_the_zone():
    from ui.step_charts import dose_gauge

    fig = dose_gauge(0.2, 0.05, 0.3, "en")
    steps = fig.data[0].gauge.steps
    assert [tuple(s.range) for s in steps][1] == (0.05, 0.3)
    assert fig.data[0].value == 0.2


# ------------------------------------------------------------------------------------ path policy


def test_restricted_policy_refuses_paths_outside_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "datasets" / "a").mkdir(parents=True)
    outside = tmp_path / "secret"
    outside.mkdir()
    (ws / "datasets" / "link").symlink_to(outside)
    shared = PathPolicy(ws, restricted=True)
    assert shared.resolve("datasets/a", "dataset.path") == (ws / "datasets" / "a").resolve()
    assert shared.resolve(str(ws / "datasets" / "a"), "dataset.path").is_dir()
    for bad in (str(outside), "../secret", "datasets/link", "/etc", "~"):
        with pytest.raises(UserError, match="outside the workspace"):
            shared.resolve(bad, "dataset.path")
    local = PathPolicy(ws, restricted=False)
    assert local.resolve(str(outside), "dataset.path") == outside.resolve()


def test_base_model_paths_follow_the_policy_names_pass_and_hub_ids_only_locally(tmp_path, monkeypatch):
    shared = PathPolicy(tmp_path / "ws", restricted=True)
    assert shared.check_base("tiny-sd15") == "tiny-sd15"
    # the built-in demo stays a name even from a folder holding a "demo" directory (the repository root)
    (tmp_path / "demo").mkdir()
    monkeypatch.chdir(tmp_path)
    assert shared.check_base("demo") == "demo"
    hub = "runwayml/stable-diffusion-v1-5"
    assert PathPolicy(tmp_path / "ws", restricted=False).check_base(hub) == hub
    with pytest.raises(UserError, match="is a hub id"):  # while shared a visitor may not make it download
        shared.check_base(hub)
    model = tmp_path / "model.safetensors"
    model.write_bytes(b"x")
    with pytest.raises(UserError, match="outside the workspace"):
        shared.check_base(str(model))
    assert PathPolicy(tmp_path / "ws", restricted=False).check_base(str(model)) == str(model.resolve())


def test_inside_keeps_run_folders_in_their_place(tmp_path):
    policy = PathPolicy(tmp_path, restricted=False)
    runs = tmp_path / "runs"
    runs.mkdir()
    assert policy.inside(runs, "lora/x", "run") == (runs / "lora" / "x").resolve()
    with pytest.raises(UserError):
        policy.inside(runs, "../../etc", "run")


def test_loopback_hosts():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")


def _zip(entries: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, "/etc/passwd")
    return buf.getvalue()


def test_zip_upload_cannot_write_outside_its_folder(tmp_path):
    upload = tmp_path / "up.zip"
    upload.write_bytes(_zip({
        "10_zxc/a.png": b"png", "10_zxc/a.txt": b"zxc", "../evil.png": b"x", "/abs/evil.png": b"x",
        "ok/../../evil2.png": b"x", "__MACOSX/._a.png": b"x", "notes.exe": b"x", "C:/win.png": b"x",
    }, links=("10_zxc/link.png",)))
    dest = tmp_path / "ws" / "datasets" / "up"
    counts = import_uploads([upload], dest)
    written = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert written == ["10_zxc/a.png", "10_zxc/a.txt"]
    assert counts == {"files": 2, "skipped": 7}
    assert not (tmp_path / "evil.png").exists() and not (tmp_path / "ws" / "evil2.png").exists()


def test_zip_over_the_size_budget_is_refused(tmp_path, monkeypatch):
    import ui.paths as paths

    monkeypatch.setattr(paths, "MAX_UNZIPPED_BYTES", 10)
    upload = tmp_path / "big.zip"
    upload.write_bytes(_zip({"a.png": b"0123456789abc"}))
    with pytest.raises(UserError, match="unpacks to more than"):
        import_uploads([upload], tmp_path / "d")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(UserError, match="not a readable zip"):
        import_uploads([bad], tmp_path / "d")


def test_safe_names():
    assert "/" not in safe_name("../../etc") and not safe_name("../../etc").startswith(".")
    assert safe_name("  ") == "dataset" and safe_name(".hidden") == "hidden"
    assert safe_name("내 데이터셋 1") == "내 데이터셋 1"


# -------------------------------------------------------------------------------------- security


def test_shared_or_non_loopback_always_needs_a_login():
    local = decide_security("127.0.0.1", share=False, auth=None)
    assert not local.restricted and local.auth is None
    shared = decide_security("127.0.0.1", share=True, auth=None)
    assert shared.restricted and shared.generated and len(shared.auth[1]) >= 30
    lan = decide_security("0.0.0.0", share=False, auth="me:a-long-password-1")
    assert lan.restricted and lan.auth == ("me", "a-long-password-1") and not lan.generated
    assert "password" in shared.banner() and shared.auth[1] in shared.banner()
    with pytest.raises(UserError):
        decide_security("0.0.0.0", share=False, auth="me:short")
    with pytest.raises(UserError):
        decide_security("127.0.0.1", share=False, auth="nocolon")


def test_hide_api_info_blanks_the_embedded_api_description():
    import asyncio

    page = b"<html><script>window.gradio_api_info = {\"named_endpoints\": {\"/scan\": 1}};</script></html>"

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html"), (b"content-length", str(len(page)).encode())]})
        await send({"type": "http.response.body", "body": page})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    asyncio.run(HideApiInfo(app)({"type": "http", "method": "GET", "path": "/"}, None, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert b"named_endpoints" not in body and b"window.gradio_api_info = null;" in body
    assert dict(sent[0]["headers"])[b"content-length"] == str(len(body)).encode()


# ------------------------------------------------------------------------------------------ words


def test_every_text_the_code_asks_for_exists_in_both_languages():
    used = set()
    for path in UI_DIR.rglob("*.py"):
        used |= set(re.findall(r"\bt\(\s*\"([a-z0-9_]+)\"", path.read_text(encoding="utf-8")))
        used |= set(re.findall(r"ui\.add\([^\n]*\), \"([a-z0-9_]+)\"(?:, \"(?:value|label)\")?\)", path.read_text()))
    missing = sorted(k for k in used if k not in TEXTS and not k.endswith("_"))  # prefixes: the next test
    assert not missing, missing
    for key, (en, ko) in TEXTS.items():
        assert en and ko, key
        assert set(re.findall(r"{(\w+)}", en)) == set(re.findall(r"{(\w+)}", ko)), key
    for f in FIELDS:
        assert f.en and f.ko


def test_prefixed_keys_cover_every_value():
    from trainer.doctor.kb import GROUPS
    from trainer.run.samples import PROMPT_KINDS
    from trainer.train.runner import TERMINAL

    for g in GROUPS:
        assert f"group_{g}" in TEXTS
    for kind in PROMPT_KINDS:
        assert f"kind_{kind}" in TEXTS
    for status in (*TERMINAL, "idle", "starting", "running"):
        assert f"status_{status}" in TEXTS
    for sev in ("error", "warning", "info"):
        assert f"sev_{sev}" in TEXTS
    for first in ("loss", "grad", "param", "ema"):
        assert f"broke_{first}" in TEXTS
    assert "progress_cache_latents" in TEXTS
    assert t("status_step", "ko", step=3, total=9) == "3 / 9 스텝"
    assert BY_NAME["lr"].label("ko") == "학습률"


# ------------------------------------------------------------------------------------ train views


def _snap(**over):
    snap = {"status": "running", "active": True, "step": 12, "total_steps": 200, "it_per_sec": 3.2,
            "eta_seconds": 59.4, "memory": {"rss_mib": 2048.0, "vram_mib": None}, "alerts": [], "samples": [],
            "progress": None, "message": "", "metrics": [], "run_dir": None}
    snap.update(over)
    return snapshot_of(snap)


def test_status_line_has_step_rate_eta_and_memory():
    line = live.status_line(_snap(), "en", "lora/1")
    for part in ("**running**", "step 12 / 200", "3.20 it/s", "ETA 0:59", "RAM 2.0 GiB", "`lora/1`"):
        assert part in line
    caching = live.status_line(_snap(progress={"task": "cache_latents", "done": 3, "total": 20}), "ko")
    assert "잠재 캐시 만드는 중: 3 / 20" in caching
    edge = {"task": "edge_pictures", "done": 48, "total": 144}  # a finishing run draws its saves at the line again
    assert "more pictures of the saves near the picture judge's line: 48 / 144" in live.status_line(
        _snap(step=200, progress=edge), "en")
    assert "더 그리는 중: 48 / 144" in live.status_line(_snap(step=200, progress=edge), "ko")


def test_the_status_line_says_when_sample_pictures_are_drawn():
    started = {"type": "started", "plan": {"sample_steps": [0, 40, 80]}}
    assert live.sampling_step(_snap(step=0, events=[started])) == 0
    assert live.sampling_step(_snap(step=40, events=[started], samples=[{"step": 0}])) == 40
    assert live.sampling_step(_snap(step=40, events=[started], samples=[{"step": 0}, {"step": 40}])) is None
    assert live.sampling_step(_snap(step=41, events=[started])) is None
    assert "step 40" in live.status_line(_snap(step=40, events=[started]), "en")


def test_alert_box_says_what_broke_first_where_when_and_what_to_try():
    alert = {"type": "alert", "kind": "nonfinite_grad", "first": "grad", "broke_at_step": 4, "step": 4,
             "module": "unet.down_blocks.0.attn1.to_q", "files": [f"10_zxc/{i}.png" for i in range(10)],
             "lr": 9.979871469976196, "loss_scale": None, "precision": "fp32", "action": "stop"}
    snap = _snap(status="guard_stopped", active=False, alerts=[alert])
    rx = live.top_prescription(None, snap.alerts[0], "en")
    assert rx and rx["title"]
    box = live.alert_html(snap, "en", rx)
    for part in ("Training stopped", "the gradient", "unet.down_blocks.0.attn1.to_q", "<td>4</td>",
                 "10_zxc/0.png", "(+2)", "lr 9.98 · fp32 · loss scale —", "Try first:", rx["title"]):
        assert part in box, part
    assert live.alert_html(_snap(), "en", None) == ""
