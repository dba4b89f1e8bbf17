"""Share-style settings: every route wants the login (the login page itself says nothing about the app), and
with the login a path outside the workspace is refused while the workspace's own dataset works. In the
default mode (loopback, no login) a web page cannot drive the app: a foreign Host (DNS rebinding) or Origin is
refused before any handler runs. Hostile values sent to the handlers get one clear message."""

from __future__ import annotations

import json
import tempfile
from urllib.parse import urlsplit

import httpx
import pytest

gradio_client = pytest.importorskip("gradio_client")

USER, PASSWORD = "doctor", "a-long-random-password-for-tests"


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("ws"), auth=(USER, PASSWORD), restricted=True) as app:
        yield app


def test_every_route_wants_the_login(shared_app):
    base = shared_app.url.rstrip("/")
    inside = shared_app.ctx.workspace / "datasets" / "demo-zxc" / "10_zxc" / "zxc_000.png"
    body = {"data": [], "fn_index": 0, "session_hash": "x", "event_data": None, "trigger_id": None}
    with httpx.Client(base_url=base, follow_redirects=False, timeout=10) as http:
        for method, path in [
            ("GET", "/config"), ("GET", "/gradio_api/info"), ("GET", "/gradio_api/info?all_endpoints=true"),
            ("GET", f"/gradio_api/file={inside}"), ("GET", "/gradio_api/file=/etc/passwd"),
            ("POST", "/gradio_api/queue/join"), ("POST", "/gradio_api/call/scan"), ("POST", "/gradio_api/call/start"),
            ("POST", "/gradio_api/run/start"), ("POST", "/gradio_api/upload"), ("GET", "/gradio_api/openapi.json"),
            ("GET", "/gradio_api/deep_link"), ("GET", "/monitoring"),
        ]:
            r = http.request(method, path, json=body if method == "POST" else None)
            assert r.status_code in (401, 403), (method, path, r.status_code)
        for path in ("/openapi.json", "/docs", "/redoc"):
            assert http.get(path).status_code == 404, path
        page = http.get("/")
        assert page.status_code == 200  # the login form
        text = page.text
        assert '"auth_required":true' in text.replace(" ", "")
        for secret in ("demo-zxc", str(shared_app.ctx.workspace), "dataset_path", "named_endpoints", "Trigger word"):
            assert secret not in text, secret


def test_with_the_login_paths_outside_the_workspace_are_refused(shared_app, tmp_path):
    from ui.testing import call

    client = gradio_client.Client(shared_app.url, auth=(USER, PASSWORD), verbose=False)

    def scan(path: str) -> dict:
        return call(client, shared_app.ctx, "scan", dataset_path=path)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for path in (str(outside), "/etc", "../../", "datasets/../../"):
        msg = scan(path)["ds_msg"]
        assert "outside the workspace" in msg, (path, msg)
    ok = scan("datasets/demo-zxc")
    assert "**20** usable pictures" in ok["ds_summary"]
    started = call(client, shared_app.ctx, "start", dataset_path="/etc")
    assert "outside the workspace" in started["train_msg"]
    started = call(client, shared_app.ctx, "start", val_path="/etc")
    assert "validation.path" in started["train_msg"] and "outside the workspace" in started["train_msg"]
    assert not shared_app.ctx.runner.active
    plan = call(client, shared_app.ctx, "plan", base=str(outside / "m.safetensors"))
    assert "outside the workspace" in plan["base_md"]


def test_the_wrong_password_gets_nothing(shared_app):
    with pytest.raises(Exception):  # noqa: B017 - gradio_client raises its own error types for a failed login
        gradio_client.Client(shared_app.url, auth=(USER, "wrong-password-xxxxxxxx"), verbose=False)


def test_while_shared_a_dataset_link_out_of_the_workspace_is_refused_and_no_thumbnail_sent(shared_app, tmp_path):
    from ui.testing import call

    client = gradio_client.Client(shared_app.url, auth=(USER, PASSWORD), verbose=False)
    folder = shared_app.ctx.datasets_dir / "linked" / "10_zxc"
    folder.mkdir(parents=True)
    demo = shared_app.ctx.datasets_dir / "demo-zxc" / "10_zxc"
    for i in range(3):
        (folder / f"{i}.png").symlink_to(demo / f"zxc_00{i}.png")  # links that stay inside: fine
    assert "**3** usable pictures" in call(client, shared_app.ctx, "scan", dataset_path="datasets/linked")["ds_summary"]
    secret = tmp_path / "secret.png"
    secret.write_bytes((demo / "zxc_005.png").read_bytes())
    (folder / "3.png").symlink_to(secret)
    out = call(client, shared_app.ctx, "scan", dataset_path="datasets/linked")
    assert "3.png is a link to" in out["ds_msg"] and "outside the workspace" in out["ds_msg"]
    assert not out["ds_gallery"]
    started = call(client, shared_app.ctx, "start", dataset_path="datasets/linked")
    assert "outside the workspace" in started["train_msg"] and not shared_app.ctx.runner.active


def test_while_shared_hub_ids_are_refused(shared_app):
    from ui.testing import call

    client = gradio_client.Client(shared_app.url, auth=(USER, PASSWORD), verbose=False)
    plan = call(client, shared_app.ctx, "plan", base="someone/some-model")
    assert "someone/some-model is a hub id" in plan["base_md"]
    (shared_app.ctx.workspace / "models" / "mine").mkdir(parents=True)  # owner/name-shaped, but a folder here
    assert "hub id" not in call(client, shared_app.ctx, "plan", base="models/mine")["base_md"]


# ------------------------------------------------------------------- the default mode: loopback, no login


@pytest.fixture(scope="module")
def local_app(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("local")) as app:
        yield app


def test_a_foreign_host_is_refused_while_the_loopback_names_are_answered(local_app):
    base = local_app.url.rstrip("/")
    port = urlsplit(base).port
    with httpx.Client(base_url=base, timeout=10) as http:
        for host in ("rebound.example", f"rebound.example:{port}", f"127.0.0.1.nip.example:{port}",
                     f"localhost.evil:{port}", f"evil@127.0.0.1:{port}"):
            for method, path in (("GET", "/"), ("GET", "/config"), ("GET", "/gradio_api/info"),
                                 ("POST", "/gradio_api/call/scan"), ("POST", "/gradio_api/upload")):
                r = http.request(method, path, headers={"Host": host}, json={"data": []} if method == "POST" else None)
                assert r.status_code == 400, (host, path, r.status_code)
                assert "demo-zxc" not in r.text
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
            for path in ("/", "/config", "/gradio_api/info"):
                assert http.get(path, headers={"Host": host}).status_code == 200, (host, path)


def test_a_foreign_origin_can_neither_call_nor_read_the_app(local_app):
    base = local_app.url.rstrip("/")
    port = urlsplit(base).port
    upload = {"files": ("a.png", b"not really a picture", "image/png")}
    with httpx.Client(base_url=base, timeout=10) as http:
        for origin in ("http://rebound.example", "null", f"http://localhost:{port + 1}", "http://127.0.0.1",
                       f"https://127.0.0.1:{port}.evil"):
            for method, path in (("GET", "/config"), ("GET", "/gradio_api/info"),
                                 ("POST", "/gradio_api/call/scan"), ("POST", "/gradio_api/queue/join")):
                r = http.request(method, path, headers={"Origin": origin}, json={"data": []} if method == "POST" else None)
                assert r.status_code == 403, (origin, path, r.status_code)
                assert "demo-zxc" not in r.text and "named_endpoints" not in r.text
                assert "access-control-allow-origin" not in r.headers
            preflight = http.options("/gradio_api/queue/join", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST"})
            assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
            r = http.post("/gradio_api/upload", headers={"Origin": origin}, files=upload)
            assert r.status_code == 403 and ".png" not in r.text
        own = f"http://127.0.0.1:{port}"
        assert http.get("/config", headers={"Origin": own}).status_code == 200
        r = http.post("/gradio_api/upload", headers={"Origin": own}, files=upload)
        assert r.status_code == 200 and r.json()[0].endswith("a.png")


def test_on_every_interface_any_host_is_answered_behind_the_login_but_never_a_foreign_origin():
    import asyncio

    from ui.security import HostOriginGuard, HostPolicy, decide_security

    lan = decide_security("0.0.0.0", share=False, auth=None)
    assert lan.hosts.any_host and lan.auth is not None
    shared = decide_security("127.0.0.1", share=True, auth=None)
    assert not shared.hosts.allows("abc123.gradio.live")
    shared.hosts.add("https://abc123.gradio.live")  # launch_app adds the share link's host once gradio has it
    assert shared.hosts.allows("abc123.gradio.live") and not shared.hosts.allows("other.gradio.live")
    assert HostPolicy.for_host("192.168.1.5").allows("192.168.1.5")

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def status(policy: HostPolicy, host: str, origin: str | None = None) -> int:
        headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "method": "POST", "path": "/", "headers": headers, "query_string": b""}
        asyncio.run(HostOriginGuard(app, policy)(scope, receive, send))
        return sent[0]["status"]

    assert status(lan.hosts, "my-pc.local:7860") == 200
    assert status(lan.hosts, "192.168.1.5:7860", "http://192.168.1.5:7860") == 200
    assert status(lan.hosts, "192.168.1.5:7860", "http://evil.example") == 403
    assert status(shared.hosts, "abc123.gradio.live", "https://abc123.gradio.live") == 200
    assert status(shared.hosts, "evil.example") == 400


def test_a_caption_goes_only_to_a_picture_the_scan_listed_and_is_bounded(local_app):
    from ui.testing import call

    client = gradio_client.Client(local_app.url, verbose=False)
    root = local_app.ctx.datasets_dir / "demo-zxc"
    assert "usable pictures" in call(client, local_app.ctx, "scan", dataset_path=str(root))["ds_summary"]
    for name in ("new/dir/x.png", "10_zxc/../../../outside.png", "10_zxc/zxc_000.txt"):
        out = call(client, local_app.ctx, "save_caption", cap_file=name, cap_text="zxc, hello")
        assert "is not a picture of the scanned dataset" in out["ds_msg"], name
    assert not (root / "new").exists() and not (local_app.ctx.datasets_dir.parent / "outside.txt").exists()
    out = call(client, local_app.ctx, "save_caption", cap_file="10_zxc/zxc_000.png", cap_text="zxc " * 5000)
    assert "the caption is 19,999 characters long" in out["ds_msg"]
    out = call(client, local_app.ctx, "save_caption", cap_file="10_zxc/zxc_000.png", cap_text="zxc, a new caption")
    assert "saved" in out["ds_msg"]
    assert (root / "10_zxc" / "zxc_000.txt").read_text() == "zxc, a new caption\n"


def _fake_run(ctx) -> str:
    from trainer.config.schema import Config, save_config

    run = ctx.runs_dir / "lora" / "20260101-000000"
    (run / "final").mkdir(parents=True, exist_ok=True)
    save_config(Config(), run / "config.toml")
    (run / "final" / "lora.safetensors").write_bytes(b"\0" * 64)
    return "lora/20260101-000000"


def test_downloads_leave_no_temp_folders_behind(local_app, tmp_path, monkeypatch):
    from ui.testing import call

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the app runs in this process
    client = gradio_client.Client(local_app.url, verbose=False)
    run = _fake_run(local_app.ctx)
    for _ in range(3):
        out = call(client, local_app.ctx, "download", review_run=run, ckpt="final/lora.safetensors")
        assert "is ready below" in out["review_msg"]
    folders = list(tmp_path.glob("lora-doctor-*"))
    assert len(folders) == 1 and [p.name for p in folders[0].iterdir()] == ["lora-20260101-000000-final-lora.safetensors"]


def test_an_unknown_prescription_id_is_a_message(local_app):
    from ui.testing import call

    client = gradio_client.Client(local_app.url, verbose=False)
    run = _fake_run(local_app.ctx)
    out = call(client, local_app.ctx, "start_change", ts_run=run, rx="no-such-prescription")
    assert "there is no prescription 'no-such-prescription'" in out["ts_msg"]
    assert not local_app.ctx.runner.active  # (a symptom is a plain dropdown: gradio itself refuses a stray one)


def test_hostile_field_values_get_one_clear_message(local_app):
    from ui.testing import call

    client = gradio_client.Client(local_app.url, verbose=False)
    for path, says in (("a" * 5000, "5,000 characters"), ("/tmp/" + "b" * 300, "File name too long")):
        msg = call(client, local_app.ctx, "scan", dataset_path=path)["ds_msg"]
        assert "dataset.path" in msg and says in msg and len(msg) < 600, msg
        assert "Something went wrong" not in msg
    assert "/dev/zero is a character device" in call(client, local_app.ctx, "plan", base="/dev/zero")["base_md"]

    # a lone surrogate cannot be sent by gradio_client (its JSON is UTF-8); the browser's JSON escape can
    info = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/scan"]["parameters"]
    values = {p["parameter_name"]: p.get("parameter_default") for p in info}
    values["trigger"] = "zx\ud800c"
    base = local_app.url.rstrip("/")
    with httpx.Client(base_url=base, timeout=60) as http:
        body = json.dumps({"data": [values[p["parameter_name"]] for p in info]})  # ASCII: "\ud800"
        event = http.post("/gradio_api/call/scan", content=body, headers={"content-type": "application/json"})
        stream = http.get(f"/gradio_api/call/scan/{event.json()['event_id']}").text
    assert "event: complete" in stream, stream[:500]
    assert "'dataset.trigger'" in stream and "lone surrogate" in stream


def test_loopback_with_a_login_keeps_the_api_description_off_the_login_page(tmp_path_factory):
    from ui.testing import running_app

    with running_app(tmp_path_factory.mktemp("auth"), auth=(USER, PASSWORD), restricted=False) as app:
        page = httpx.get(app.url, timeout=10)
    assert page.status_code == 200 and '"auth_required":true' in page.text.replace(" ", "")
    for secret in ("named_endpoints", "dataset_path", "demo-zxc", "Trigger word"):
        assert secret not in page.text, secret
