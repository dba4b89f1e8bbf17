"""LoRA Doctor: ``python app.py [--host 127.0.0.1] [--port 7860] [--share] [--auth U:P] [--workspace DIR]
[--lang ko|en]``.

Starts on the built-in demo: the demo character's dataset is written into the workspace on first run and
preselected with the demo preset, so Start trains at once, on a CPU too. Loopback only unless told otherwise;
shared or on another interface it asks for a login (a long random password is made and printed when no
``--auth`` is given) and only accepts paths inside the workspace.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python app.py", description="LoRA Doctor: guided Stable Diffusion LoRA training")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this computer only)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--share", action="store_true", help="a public gradio.live link (a login is then required)")
    p.add_argument("--auth", metavar="USER:PASSWORD", help="login for the app (required in spirit when shared)")
    p.add_argument("--workspace", default="./workspace", help="datasets, runs and presets live here")
    p.add_argument("--lang", choices=["ko", "en"], default="en", help="starting language of the UI")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    # A CPU run's OpenMP threads spin-wait at every barrier (GNU OpenMP's default spins ~300,000 times) and so hold
    # every core; the page's server and the browser then pre-empt one spinning thread and the others wait for it.
    # A short spin leaves the cores sooner: measured with the Train tab open on 2 cores, 6.91 against 5.88 it/s,
    # and the same 8.1 it/s with the tab closed (bench/bench_watch.py, docs/performance.md). Read as torch loads.
    os.environ.setdefault("GOMP_SPINCOUNT", "20000")
    from trainer.errors import UserError
    from ui.app import build_app, launch_app
    from ui.context import make_context
    from ui.security import decide_security

    try:
        security = decide_security(args.host, args.share, args.auth)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ctx = make_context(args.workspace, restricted=security.restricted, lang=args.lang)
    if security.auth:
        print(security.banner(), flush=True)
    print(f"workspace: {ctx.workspace}", flush=True)
    demo = build_app(ctx)
    launch_app(demo, security, host=args.host, port=args.port, share=args.share)
    return 0


if __name__ == "__main__":
    sys.exit(main())
