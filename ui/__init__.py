"""The Gradio UI of LoRA Doctor: ``ui.app.build_app(ctx)`` builds the wizard; ``ui.context.make_context`` makes
the workspace and starting values. Nothing here touches a tensor: it reads runner snapshots and run folders,
and sends commands."""
