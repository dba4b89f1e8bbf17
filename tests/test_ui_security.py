"""Share-style settings: every route wants the login (the login page itself says nothing about the app), and
with the login a path outside the workspace is refused while the workspace's own dataset works."""

from __future__ import annotations

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
    assert not shared_app.ctx.runner.active
    plan = call(client, shared_app.ctx, "plan", base=str(outside / "m.safetensors"))
    assert "outside the workspace" in plan["base_md"]


def test_the_wrong_password_gets_nothing(shared_app):
    with pytest.raises(Exception):  # noqa: B017 - gradio_client raises its own error types for a failed login
        gradio_client.Client(shared_app.url, auth=(USER, "wrong-password-xxxxxxxx"), verbose=False)
