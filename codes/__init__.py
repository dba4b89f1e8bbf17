"""What the trainer library and the word tables both name, below both of them: a message as a code and its values
(:mod:`codes.message`), who words it (:mod:`codes.wording`) and the ids the words are keyed by
(:mod:`codes.prompts`). It imports nothing of ``trainer/``, ``words/`` or ``ui/`` (docs/design.md, "Layers")."""
