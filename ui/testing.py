"""Start the app in this process on a free port (tests, benches): ``with running_app(workspace) as app: ...``."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trainer.train.runner import Runner

from .app import build_app, launch_app
from .context import AppContext, make_context
from .security import Security


@dataclass
class RunningApp:
    url: str
    ctx: AppContext
    security: Security


def call(client, ctx: AppContext, name: str, **kwargs) -> dict:
    """Call endpoint ``name`` through a gradio_client ``client``; its outputs by component name. A component
    update (new choices and a value) arrives as a dict: its value is kept."""
    result = client.predict(api_name=f"/{name}", **kwargs)
    names = ctx.api_outputs[name]
    values = result if isinstance(result, tuple | list) and len(names) > 1 else (result,)
    return {n: v.get("value") if isinstance(v, dict) and v.get("__type__") == "update" else v
            for n, v in zip(names, values)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(workspace: str | Path, *, lang: str = "en", auth: tuple[str, str] | None = None,
                restricted: bool = False, runner: Runner | None = None) -> Iterator[RunningApp]:
    """The app on 127.0.0.1 with its own runner (unless given); ``restricted`` applies the shared-mode policy
    (login and workspace-only paths) without opening a public link."""
    security = Security(restricted=restricted, auth=auth, generated=False)
    ctx = make_context(workspace, restricted=restricted, lang=lang, runner=runner or Runner())
    demo = build_app(ctx)
    port = free_port()
    launch_app(demo, security, port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield RunningApp(f"http://127.0.0.1:{port}/", ctx, security)
    finally:
        ctx.runner.stop()
        ctx.runner.wait(120)
        demo.close()
