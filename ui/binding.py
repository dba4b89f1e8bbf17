"""Named components and named handlers.

Every component the handlers touch is registered under a name; a handler is a keyword-only function whose
parameters are those names and which returns ``{name: value}`` for what it changes (anything left out stays
as it is). :meth:`UI.on` wires it to gradio, turning :class:`~trainer.errors.UserError` into a warning
toast plus a message box on the step, and any other exception into a one-line message (the traceback goes to
the console, never to the page).
"""

from __future__ import annotations

import functools
import html
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from gradio.components import Component

from trainer.errors import UserError

from .context import AppContext
from .i18n import t

log = logging.getLogger("lora_doctor.ui")


# The boxes hold text, never attribute values: quotes stay as typed, only &, < and > are escaped.
def error_box(message: str) -> str:
    return f'<div class="ld-error">⚠️ {html.escape(str(message), quote=False)}</div>'


def ok_box(message: str) -> str:
    return f'<div class="ld-ok">{html.escape(str(message), quote=False)}</div>'


class Toasts:
    """Warning toasts that do not pile up: a tab is not shown a message again while its first toast is still up,
    nor more than ``limit`` toasts at once. Every refusal also writes the step's message box, so a toast left
    out hides nothing."""

    def __init__(self, duration: float = 8.0, limit: int = 3, clock: Callable[[], float] = time.monotonic):
        self.duration, self.limit, self.clock = duration, limit, clock
        self._shown: dict[tuple[str, str], float] = {}  # (tab, message) -> when its toast went up
        self._lock = threading.Lock()

    def warn(self, message: str) -> bool:
        """Show ``message`` as a warning toast unless it would pile up; True when shown."""
        now, tab = self.clock(), _tab_id()
        with self._lock:
            self._shown = {k: at for k, at in self._shown.items() if now - at < self.duration}
            up = [msg for (who, msg) in self._shown if who == tab]
            if message in up or len(up) >= self.limit:
                return False
            self._shown[(tab, message)] = now
        gr.Warning(message, duration=self.duration)
        return True


def _tab_id() -> str:
    """The browser tab (gradio session) of the event being handled; "" outside an event."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return str(getattr(request, "session_hash", None) or "")


class UI:
    """The registry of named components for one app, plus the language texts to relabel."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        self.c: dict[str, Any] = {}
        self.texts: list[tuple[str, str, str]] = []  # (component name, i18n key, attribute)
        self.cards: list[str] = []  # preset ids shown as cards (their texts come from the preset files)
        self.toasts = Toasts()

    def add(self, name: str, component: Any, text: str | None = None, attr: str = "label") -> Any:
        if name in self.c:
            raise ValueError(f"component name {name!r} registered twice")
        self.c[name] = component
        if text:
            self.texts.append((name, text, attr))
        return component

    def __getitem__(self, name: str) -> Any:
        return self.c[name]

    def wrap(self, fn: Callable[..., dict[str, Any]], message: str | None, toast: bool = True,
             reset: Callable[[str], dict[str, Any]] | None = None) -> Callable[..., Any]:
        def refused(text: str, lang: str, show_toast: bool) -> dict[str, Any]:
            if show_toast:
                self.toasts.warn(text)
            return {**(reset(lang) if reset else {}), **({message: error_box(text)} if message else {})}

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:  # args: only what gradio injects (event data)
            lang = kwargs.get("lang") or self.ctx.lang
            try:
                out = fn(*args, **kwargs)
            except UserError as e:
                out = refused(e.say(lang), lang, toast)  # a trainer error words itself in the reader's language
            except gr.Error:
                raise
            except Exception as e:  # a bug: one line on the page, the traceback in the console
                log.exception("handler %s failed", getattr(fn, "__name__", fn))
                out = refused(t("err_unexpected", lang, error=f"{type(e).__name__}: {e}"), lang, True)
            if not out:
                return gr.skip()
            return {self.c[k]: v for k, v in out.items()}

        return handler

    def on(
        self,
        triggers: Any,
        fn: Callable[..., dict[str, Any]],
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        api_name: str | None = None,
        message: str | None = None,
        toast: bool = True,
        reset: Callable[[str], dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Wire ``fn`` (keyword-only parameters named like ``inputs``) to one trigger, a list of them, or the end
        of an earlier event (its Dependency). Without ``api_name`` the endpoint stays out of the public API.
        ``reset(lang)`` gives what the outputs show when ``fn`` refuses (no stale view under the error)."""
        outs = list(dict.fromkeys([*outputs, *([message] if message else [])]))
        visibility = {"api_name": api_name} if api_name else {"api_visibility": "private"}
        if api_name:  # what an API client receives, in order (states and layouts are not sent)
            self.ctx.api_outputs[api_name] = [
                n for n in outs if isinstance(self.c[n], Component) and not self.c[n].skip_api]
        if isinstance(triggers, gr.events.Dependency):  # run after another event ends
            return triggers.then(self.wrap(fn, message, toast, reset), inputs_kwargs={n: self.c[n] for n in inputs},
                                 outputs=[self.c[n] for n in outs], **visibility, **kwargs)
        trigger_list = triggers if isinstance(triggers, list) else [triggers]
        return gr.on(
            trigger_list,
            self.wrap(fn, message, toast, reset),
            inputs_kwargs={n: self.c[n] for n in inputs},
            outputs=[self.c[n] for n in outs],
            **visibility,
            **kwargs,
        )
