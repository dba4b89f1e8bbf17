"""Big denoisers on small cards: the frozen Linear weights stored in fewer bits (``model.base_quant``) and some of the
denoiser's repeated blocks kept in CPU memory between their uses (``model.block_swap``). Family-neutral: a family
names its blocks (:meth:`trainer.models.family.ModelFamily.denoiser_blocks`), nothing here calls the denoiser.

Quantization replaces every ``torch.nn.Linear`` of the denoiser before the LoRA is attached: bitsandbytes'
``Linear8bitLt`` (LLM.int8, outlier threshold 6) or ``Linear4bit`` (NF4, double-quantized block scales, computing in
the run's weight dtype), whose LoRA layers peft has (``peft.tuners.lora.bnb``), or :class:`Fp8Linear` (e4m3 weights
with one fp32 scale per output row, upcast one layer at a time). The LoRA on top keeps the run's precision, and its
files hold only LoRA tensors, so they load into an unquantized base as any other.

Block swap (:class:`BlockSwap`) keeps the last N blocks' frozen tensors in (pinned) CPU memory and copies them to the
compute device just before the block's forward; after it the device copies are dropped (the weights are frozen: the
CPU copy is still exact, nothing travels back). In backward an identity function at the block's outputs brings them
again before the block's gradients are computed and one at its inputs lets them go after, so the autograd graph,
gradient checkpointing's recomputation included, always finds them on the device. The LoRA weights of those blocks
stay on the device throughout. One swapped block is on the device at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from trainer.errors import UserError, error_reason
from trainer.message import msg
from trainer.models.blockswap import CPU, BlockSwap

QUANT_MODES = ("none", "int8", "nf4", "fp8")
INT8_THRESHOLD = 6.0  # LLM.int8's outlier threshold (bitsandbytes' and diffusers' default)
NF4_BLOCK = 64  # bitsandbytes' 4-bit block size: one absmax per 64 weights
FP8 = getattr(torch, "float8_e4m3fn", None)


def is_low_memory(model_cfg) -> bool:
    return model_cfg.base_quant != "none" or model_cfg.block_swap > 0


# --------------------------------------------------------------------------------------------- checks


def swap_error(block_swap: int, blocks: int | None, family_label: str) -> UserError | None:
    """Why ``model.block_swap`` cannot be honoured for a denoiser of ``blocks`` blocks (None: the family cannot swap)."""
    if block_swap and blocks is None:
        return UserError(msg("error.lowmem.no_blocks", family=family_label, n=block_swap))
    if blocks is not None and block_swap > blocks:
        return UserError(msg("error.lowmem.too_many_blocks", n=block_swap, blocks=blocks, family=family_label))
    return None


def check_quant(mode: str, device: torch.device, dtype: torch.dtype) -> None:
    """Refuse ``model.base_quant = mode`` where it cannot run: a tiny layer is quantized on ``device`` and runs a
    forward and a backward there (bitsandbytes' kernels differ by backend and version; fp8 needs torch's float8)."""
    if mode == "none":
        return
    if mode == "fp8" and FP8 is None:
        raise UserError(msg("error.lowmem.no_fp8", torch=torch.__version__))
    if mode in ("int8", "nf4"):
        try:
            import bitsandbytes  # noqa: F401
        except Exception as e:  # ImportError, or its own RuntimeError without a usable backend
            raise UserError(msg("error.lowmem.no_bnb", mode=mode, reason=f"{type(e).__name__}: {e}")) from None
    try:
        layer = quantized_linear(torch.nn.Linear(64, 64, dtype=dtype), mode, dtype, device)
        x = torch.randn(2, 64, dtype=dtype, device=device, requires_grad=True)
        layer(x).float().sum().backward()
        assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    except Exception as e:
        key = "error.lowmem.fp8_device" if mode == "fp8" else "error.lowmem.bnb_device"
        raise UserError(msg(key, mode=mode, device=device.type, reason=error_reason(e))) from None


# --------------------------------------------------------------------------------------------- quantization


class _Fp8Matmul(torch.autograd.Function):
    """``x @ (w × scale)ᵀ + b`` with the weight kept in fp8 for the backward (a dequantized copy would be kept alive
    until then otherwise, as large as the unquantized layer)."""

    @staticmethod
    def forward(ctx, x, weight, scale, bias, dtype):
        ctx.save_for_backward(weight, scale)
        ctx.dtype, ctx.x_dtype = dtype, x.dtype
        return F.linear(x.to(dtype), _dequant_fp8(weight, scale, dtype), None if bias is None else bias.to(dtype))

    @staticmethod
    def backward(ctx, grad):
        weight, scale = ctx.saved_tensors
        gx = (grad.to(ctx.dtype) @ _dequant_fp8(weight, scale, ctx.dtype)).to(ctx.x_dtype) if ctx.needs_input_grad[0] else None
        return gx, None, None, None, None


def _dequant_fp8(weight: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return weight.to(dtype).mul_(scale.to(dtype)[:, None])


class Fp8Linear(torch.nn.Linear):
    """A frozen Linear whose weight is stored as float8 e4m3 with one fp32 scale per output row (the row's largest
    weight maps to fp8's largest value), upcast to the compute dtype at each use. A ``torch.nn.Linear`` to peft,
    which puts its LoRA on it; ``compute_dtype`` tells peft the LoRA's starting dtype, as the unquantized layer's."""

    def __init__(self, linear: torch.nn.Linear, compute_dtype: torch.dtype, device: torch.device):
        torch.nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach().to(device=device, dtype=torch.float32)
        assert FP8 is not None  # check_quant refuses fp8 on a torch without it
        scale = w.abs().amax(dim=1).clamp(min=torch.finfo(torch.float32).tiny) / torch.finfo(FP8).max
        self.weight = torch.nn.Parameter((w / scale[:, None]).to(FP8), requires_grad=False)
        self.register_buffer("scale", scale)
        bias = linear.bias
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().to(device), requires_grad=False)
        self.compute_dtype = compute_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kind = x.device.type
        dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype
        return _Fp8Matmul.apply(x, self.weight, self.scale, self.bias, dtype)


def quantized_linear(linear: torch.nn.Linear, mode: str, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """``linear`` stored the ``mode`` way on ``device`` (quantized there), frozen."""
    if mode == "fp8":
        return Fp8Linear(linear, dtype, device)
    import bitsandbytes as bnb

    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # "inputs will be cast to float16", at every call
    has_bias = linear.bias is not None
    q: Any
    if mode == "int8":
        q = bnb.nn.Linear8bitLt(linear.in_features, linear.out_features, bias=has_bias, has_fp16_weights=False,
                                threshold=INT8_THRESHOLD, device="meta")
        q.weight = bnb.nn.Int8Params(linear.weight.detach(), requires_grad=False, has_fp16_weights=False)
        q.compute_dtype = dtype  # read by peft only: the LoRA starts in the dtype it has on a plain layer
    else:
        q = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=has_bias, compute_dtype=dtype,
                              compress_statistics=True, quant_type="nf4", device="meta")
        q.weight = bnb.nn.Params4bit(linear.weight.detach(), requires_grad=False, compress_statistics=True,
                                     quant_type="nf4", blocksize=NF4_BLOCK, module=q)
        # bitsandbytes repacks a 4-bit weight for its CPU kernel at an eval-mode forward without gradients; the
        # repacked weight failed in peft's LoRA layer here, and block swap moves the weight as stored: keep it so
        q.support_avx512bf16_for_cpu = False
    if has_bias:
        q.bias = torch.nn.Parameter(linear.bias.detach(), requires_grad=False)
    return q.to(device)  # bitsandbytes quantizes on the way to the device


def quantize_linears(model: torch.nn.Module, mode: str, dtype: torch.dtype, device: torch.device,
                     skip: Callable[[torch.nn.Module], bool] = lambda m: False) -> int:
    """Replace every plain ``torch.nn.Linear`` of ``model`` (and not under a ``skip``-ped module) by its ``mode``
    form on ``device``, one layer at a time (each unquantized weight is let go as its layer is done). The count."""
    done = 0
    for name, module in list(model.named_modules()):
        if type(module) is not torch.nn.Linear or skip(module):
            continue
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, leaf, quantized_linear(module, mode, dtype, device))
        done += 1
    return done


def set_compute_dtype(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """After the run's precision changes (fp16 → bf16): the quantized layers compute in the new dtype."""
    for m in model.modules():
        if hasattr(m, "compute_dtype"):
            setattr(m, "compute_dtype", dtype)  # noqa: B010  # an attribute torch's Module types do not know


# --------------------------------------------------------------------------------------------- placing


def _move_own(module: torch.nn.Module, device: torch.device) -> None:
    """``module``'s own parameters and buffers (not its children's) to ``device``."""
    for p in module._parameters.values():
        if p is not None and p.device != device:
            p.data = p.data.to(device)
    for k, b in module._buffers.items():
        if b is not None and b.device != device:
            module._buffers[k] = b.to(device)


def place_denoiser(denoiser: torch.nn.Module, blocks: list | None, model_cfg, device: torch.device,
                   dtype: torch.dtype, offload: torch.device = CPU, keep: tuple = ()) -> BlockSwap | None:
    """Put the (still unquantized, CPU-loaded) denoiser where the run computes: its Linear layers quantized on
    ``device`` as ``model.base_quant`` says, the last ``model.block_swap`` of ``blocks`` then parked on ``offload``
    block by block (the device never holds more than the resident part and one block in flight), the rest moved
    to ``device``. The Linear layers under ``keep`` stay as they are (a module that casts its input to its own
    weight's dtype). Call before the LoRA is attached, and :meth:`BlockSwap.settle` after."""
    mode, n = model_cfg.base_quant, model_cfg.block_swap
    kept = {id(m) for k in keep for m in k.modules()}
    swapped = list(blocks[len(blocks) - n:]) if n and blocks else []
    swap = BlockSwap(swapped, device, offload) if swapped else None
    inside = {id(m) for b in swapped for m in b.modules()}
    for block in swapped:
        if mode != "none":
            quantize_linears(block, mode, dtype, device)
        assert swap is not None
        swap.park(block)
        inside |= {id(m) for m in block.modules()}  # the quantized layers are new modules
    if mode != "none":
        quantize_linears(denoiser, mode, dtype, device, skip=lambda m: id(m) in inside or id(m) in kept)
        denoiser.is_loaded_in_8bit = mode == "int8"  # peft then puts its bitsandbytes LoRA layers on them
        denoiser.is_loaded_in_4bit = mode == "nf4"
    for m in denoiser.modules():
        if id(m) not in inside:
            _move_own(m, device)
    return swap


def prepare_low_memory(denoiser: torch.nn.Module, adapter, model_cfg, device: torch.device, dtype: torch.dtype,
                       offload: torch.device = CPU) -> BlockSwap | None:
    """Check ``model.base_quant`` and ``model.block_swap`` against this family, denoiser and device (a
    :class:`UserError` naming the key and the fix), then :func:`place_denoiser`."""
    blocks = adapter.denoiser_blocks(denoiser)
    if error := swap_error(model_cfg.block_swap, None if blocks is None else len(blocks), adapter.label):
        raise error
    check_quant(model_cfg.base_quant, device, dtype)
    return place_denoiser(denoiser, blocks, model_cfg, device, dtype, offload, keep=adapter.unquantized(denoiser))
