"""``model.block_swap``: the last N of a denoiser's repeated blocks (:meth:`ModelFamily.denoiser_blocks`) keep their
frozen tensors in (pinned) CPU memory and visit the compute device for their forward and their backward, one at a
time; :func:`trainer.models.lowmem.place_denoiser` parks them.

Before a block's forward its frozen tensors are copied to the device, after it the device copies are dropped (the
weights are frozen: the CPU copy is still exact, nothing travels back). In backward an identity function at the
block's outputs brings them again before the block's gradients are computed and one at its inputs lets them go
after, so the autograd graph, gradient checkpointing's recomputation included, always finds them on the device.
The block's trainable (LoRA) weights stay on the device throughout. bitsandbytes' quantized layers travel with
their scales.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

CPU = torch.device("cpu")



class _Slot:
    """One tensor a block computes with, wherever its module keeps it: a parameter's data, a buffer, or a tensor
    attribute of bitsandbytes' quantization state."""

    def __init__(self, get: Callable[[], torch.Tensor], put: Callable[[torch.Tensor], None]):
        self.get, self.put = get, put


def _param_slot(p: torch.nn.Parameter) -> _Slot:
    return _Slot(lambda: p.data, lambda t: setattr(p, "data", t))


def _attr_slot(obj: Any, name: str) -> _Slot:
    return _Slot(lambda: getattr(obj, name), lambda t: setattr(obj, name, t))


def _buffer_slot(module: torch.nn.Module, name: str) -> _Slot:
    def get() -> torch.Tensor:
        t = module._buffers[name]
        assert t is not None
        return t

    return _Slot(get, lambda t: module._buffers.__setitem__(name, t))


def _slots(block: torch.nn.Module) -> Iterator[_Slot]:
    """The frozen tensors of ``block`` (its trainable LoRA weights stay on the device)."""
    for m in block.modules():
        for p in m._parameters.values():
            if p is not None and not p.requires_grad:
                yield _param_slot(p)
                quant = getattr(p, "quant_state", None)  # bitsandbytes' 4-bit scales (and their own, nested)
                while quant is not None:
                    yield from (_attr_slot(quant, k) for k in ("absmax", "code", "offset")
                                if isinstance(getattr(quant, k, None), torch.Tensor))
                    quant = getattr(quant, "state2", None)
        for k, b in m._buffers.items():
            if b is not None:
                yield _buffer_slot(m, k)
        state = getattr(m, "state", None)  # bitsandbytes' 8-bit layer: its row scales (CB is the weight itself)
        if state is not None and isinstance(getattr(state, "SCB", None), torch.Tensor):
            yield _attr_slot(state, "SCB")


def _realias(block: torch.nn.Module) -> None:
    """bitsandbytes' 8-bit layer computes with ``state.CB``, the weight's own tensor: point it at the weight's
    data wherever that now is."""
    for m in block.modules():
        state = getattr(m, "state", None)
        if state is not None and getattr(state, "CB", None) is not None:
            state.CB = m.weight.data


def _ready_8bit(block: torch.nn.Module) -> None:
    # bitsandbytes moves the 8-bit statistics from the weight to the layer's state at its first forward; do it now
    for m in block.modules():
        weight = getattr(m, "weight", None)
        if getattr(weight, "CB", None) is not None and callable(ready := getattr(m, "init_8bit_state", None)):
            ready()


class _Outputs(torch.autograd.Function):
    """At a swapped block's outputs: in backward, the first of the block's nodes to run; it brings the block."""

    @staticmethod
    def forward(ctx, swap, index, *ys):
        ctx.swap, ctx.index = swap, index
        return tuple(y.view_as(y) for y in ys)

    @staticmethod
    def backward(ctx, *grads):
        ctx.swap.hold(ctx.index)
        return (None, None, *grads)


class _Inputs(torch.autograd.Function):
    """At a swapped block's inputs: in backward, the last of the block's nodes to run; it lets the block go. A
    gradient-taking empty ``leaf`` among its inputs makes it run even where no input of the block needs one."""

    @staticmethod
    def forward(ctx, swap, index, leaf, *xs):
        ctx.swap, ctx.index = swap, index
        return tuple(x.view_as(x) for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        ctx.swap.release(ctx.index)
        return (None, None, None, *grads)


def _floats(values) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, torch.Tensor) and v.is_floating_point()]


class BlockSwap:
    """``blocks`` live on ``offload`` (the CPU; pinned when ``device`` is a GPU) and visit ``device`` for their
    forward and their backward. ``visits`` counts the copies of a block to the device, ``bytes_moved`` their bytes."""

    def __init__(self, blocks: list[torch.nn.Module], device: torch.device, offload: torch.device = CPU):
        self.blocks, self.device, self.offload = list(blocks), device, offload
        self.pin = device.type == "cuda" and offload.type == "cpu"
        self.present: dict[int, list[tuple[_Slot, torch.Tensor]]] = {}
        self.held: set[int] = set()
        self.visits = 0
        self.bytes_moved = 0
        self._leaf = torch.zeros(0, device=device, requires_grad=True)
        self._hooks = []
        for i, block in enumerate(self.blocks):
            self._hooks.append(block.register_forward_pre_hook(self._before(i), with_kwargs=True))
            self._hooks.append(block.register_forward_hook(self._after(i), with_kwargs=True))

    # ---- where the tensors are

    def park(self, block: torch.nn.Module) -> None:
        """Move ``block``'s frozen tensors to the offload device (before training; they stay there)."""
        _ready_8bit(block)
        for slot in _slots(block):
            t = slot.get().to(self.offload)
            slot.put(t.pin_memory() if self.pin and not t.is_pinned() else t)
        _realias(block)

    def bring(self, i: int) -> None:
        if i in self.present:
            return
        block = self.blocks[i]
        stash = []
        for slot in _slots(block):
            master = slot.get()
            stash.append((slot, master))
            slot.put(master.to(self.device, non_blocking=self.pin, copy=True))
            self.bytes_moved += master.numel() * master.element_size()
        _realias(block)
        self.present[i] = stash
        self.visits += 1

    def send_back(self, i: int) -> None:
        if i in self.held or i not in self.present:
            return
        for slot, master in self.present.pop(i):
            slot.put(master)  # the offload copy was never changed: the device copy is simply let go
        _realias(self.blocks[i])

    def hold(self, i: int) -> None:
        self.held.add(i)
        self.bring(i)

    def release(self, i: int) -> None:
        self.held.discard(i)
        self.send_back(i)

    # ---- the hooks

    def _before(self, i: int):
        def hook(module, args, kwargs):
            self.bring(i)
            if not torch.is_grad_enabled():
                return None
            values = [*args, *kwargs.values()]
            where = _floats(values)
            wrapped = dict(zip(where, _Inputs.apply(self, i, self._leaf, *(values[k] for k in where)), strict=True))
            values = [wrapped.get(k, v) for k, v in enumerate(values)]
            return tuple(values[: len(args)]), dict(zip(kwargs, values[len(args):], strict=True))

        return hook

    def _after(self, i: int):
        def hook(module, args, kwargs, output):
            if torch.is_grad_enabled():
                single = isinstance(output, torch.Tensor)
                values = [output] if single else list(output) if isinstance(output, tuple | list) else None
                if values is not None and (where := _floats(values)):
                    wrapped = dict(zip(where, _Outputs.apply(self, i, *(values[k] for k in where)), strict=True))
                    values = [wrapped.get(k, v) for k, v in enumerate(values)]
                    output = values[0] if single else type(output)(values)
            self.send_back(i)
            return output

        return hook

    def settle(self, model: torch.nn.Module) -> None:
        """After the LoRA is attached (peft puts each adapter beside its base weight, here on the offload device):
        every trainable tensor of ``model`` on the compute device."""
        for p in model.parameters():
            if p.requires_grad and p.device != self.device:
                p.data = p.data.to(self.device)

    def remove(self) -> None:
        for h in self._hooks:
            h.remove()
