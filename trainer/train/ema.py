"""EMA of the LoRA weights: fp32 shadow over the trainable params only (the three EMA pitfalls of docs/design.md,
"Numerics rules": low-precision accumulation, averaging the whole UNet, and mixing EMA and live weights when
sampling or saving).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


class LoraEMA:
    def __init__(self, params: list[torch.nn.Parameter], decay: float, warmup: bool = True):
        self.params = list(params)
        self.decay = decay
        self.warmup = warmup
        self.num_updates = 0
        self.shadow = [p.detach().float().clone() for p in self.params]

    def current_decay(self) -> float:
        if not self.warmup:
            return self.decay
        # Early on the average would be dominated by the random init; ramp the decay up with the step count.
        return min(self.decay, (1 + self.num_updates) / (10 + self.num_updates))

    @torch.no_grad()
    def update(self) -> None:
        d = self.current_decay()
        live = [p.detach().float() for p in self.params]
        torch._foreach_lerp_(self.shadow, live, 1.0 - d)  # shadow += (1 - d) * (live - shadow), fused
        self.num_updates += 1

    @torch.no_grad()
    def finite_flag(self) -> torch.Tensor:
        """A 0-dim bool tensor (no host sync): are all shadow tensors finite?"""
        return torch.stack(torch._foreach_norm(self.shadow)).isfinite().all()

    @torch.no_grad()
    def drift(self) -> torch.Tensor:
        """‖shadow − live‖ / ‖live‖ over all tensors, as a tensor (no sync)."""
        diffs = torch._foreach_sub([p.detach().float() for p in self.params], self.shadow)
        num = torch.stack(torch._foreach_norm(diffs)).norm()
        den = torch.stack(torch._foreach_norm([p.detach().float() for p in self.params])).norm()
        return num / den.clamp_min(1e-12)

    @contextmanager
    def swapped_in(self):
        """Temporarily put the EMA weights into the live params (for sampling or saving), then restore."""
        backup = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for p, s in zip(self.params, self.shadow):
                p.copy_(s.to(p.dtype))
        try:
            yield
        finally:
            with torch.no_grad():
                for p, b in zip(self.params, backup):
                    p.copy_(b)

    def state_dict(self) -> dict:
        return {"decay": self.decay, "num_updates": self.num_updates, "shadow": [s.cpu() for s in self.shadow]}

    def load_state_dict(self, state: dict) -> None:
        self.num_updates = int(state["num_updates"])
        for s, loaded in zip(self.shadow, state["shadow"]):
            s.copy_(loaded.to(s.device, torch.float32))
