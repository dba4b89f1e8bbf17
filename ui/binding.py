"""Named components and named handlers.

Every component the handlers touch is registered under a name; a handler is a keyword-only function whose
parameters are those names and which returns ``{name: value}`` for what it changes (anything left out stays
as it is). :meth:`UI.on` wires it to gradio, turning :class:`~trainer.errors.UserError` into a warning
toast plus a message box on the step, and any other exception into a one-line message (the traceback goes to
the console, never to the page).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from gradio.components import Component

from trainer.errors import UserError

from .context import AppContext
from .i18n import t

log = logging.getLogger("lora_doctor.ui")


def error_box(message: str) -> str:
    return f'<div class="ld-error">⚠️ {_escape(message)}</div>'


def ok_box(message: str) -> str:
    return f'<div class="ld-ok">{_escape(message)}</div>'


def _escape(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class UI:
    """The registry of named components for one app, plus the language texts to relabel."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        self.c: dict[str, Any] = {}
        self.texts: list[tuple[str, str, str]] = []  # (component name, i18n key, attribute)
        self.cards: list[str] = []  # preset ids shown as cards (their texts come from the preset files)

    def add(self, name: str, component: Any, text: str | None = None, attr: str = "label") -> Any:
        if name in self.c:
            raise ValueError(f"component name {name!r} registered twice")
        self.c[name] = component
        if text:
            self.texts.append((name, text, attr))
        return component

    def __getitem__(self, name: str) -> Any:
        return self.c[name]

    def wrap(self, fn: Callable[..., dict[str, Any]], message: str | None, toast: bool = True) -> Callable[..., Any]:
        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:  # args: only what gradio injects (event data)
            lang = kwargs.get("lang") or self.ctx.lang
            try:
                out = fn(*args, **kwargs)
            except UserError as e:
                if toast:
                    gr.Warning(str(e))
                out = {message: error_box(str(e))} if message else {}
            except gr.Error:
                raise
            except Exception as e:  # a bug: one line on the page, the traceback in the console
                log.exception("handler %s failed", getattr(fn, "__name__", fn))
                text = t("err_unexpected", lang, error=f"{type(e).__name__}: {e}")
                gr.Warning(text)
                out = {message: error_box(text)} if message else {}
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
        **kwargs: Any,
    ) -> Any:
        """Wire ``fn`` (keyword-only parameters named like ``inputs``) to one trigger, a list of them, or the end
        of an earlier event (its Dependency). Without ``api_name`` the endpoint stays out of the public API."""
        outs = list(dict.fromkeys([*outputs, *([message] if message else [])]))
        visibility = {"api_name": api_name} if api_name else {"api_visibility": "private"}
        if api_name:  # what an API client receives, in order (states and layouts are not sent)
            self.ctx.api_outputs[api_name] = [
                n for n in outs if isinstance(self.c[n], Component) and not self.c[n].skip_api]
        if isinstance(triggers, gr.events.Dependency):  # run after another event ends
            return triggers.then(self.wrap(fn, message, toast), inputs_kwargs={n: self.c[n] for n in inputs},
                                 outputs=[self.c[n] for n in outs], **visibility, **kwargs)
        trigger_list = triggers if isinstance(triggers, list) else [triggers]
        return gr.on(
            trigger_list,
            self.wrap(fn, message, toast),
            inputs_kwargs={n: self.c[n] for n in inputs},
            outputs=[self.c[n] for n in outs],
            **visibility,
            **kwargs,
        )
