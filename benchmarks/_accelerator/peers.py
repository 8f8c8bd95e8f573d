"""The peers on the same card, in plain PyTorch: the matmul peak, timm's
gMLP-S/16 and Mixer-B/16 (their random weights and logits are also the
Keras workers' parity reference) and transformers' `BertForMaskedLM`.

Each figure is a median of device-timed steps (CUDA events) after warm-up.
"""

import importlib.util
import os

import throughput

from _accelerator import sizes as sizes_module
from _accelerator import torch_timing
from _accelerator.record import relative_error


def missing(package):
    """A skipped row's fields when `package` is not importable, else None."""
    if importlib.util.find_spec(package) is None:
        return dict(skipped=f"{package} is not importable")
    return None


def matmul_peak(context, dtype):
    """TFLOP/s of an n x n x n product on random data (TF32 off)."""
    import torch

    n = context.size["matmul_size"]
    device = torch_timing.device(torch)
    a = torch.randn(n, n, device=device, dtype=getattr(torch, dtype))
    b = torch.randn(n, n, device=device, dtype=getattr(torch, dtype))
    with torch_timing.float32_precision(torch, highest=True):
        seconds = torch_timing.event_seconds(torch, lambda: a @ b, 3, 10)
    return dict(value=round(2 * n**3 / seconds / 1e12, 2), unit="TFLOP/s", dtype=dtype)


def timm_model(torch, name, quick):
    """timm's model with random weights, every parameter perturbed: timm
    starts the spatial projection near zero and the head at zero, which
    would hide a transposed or misplaced weight."""
    import timm

    size = sizes_module.sizes(quick)["image_size"]
    if quick:
        model = quick_timm_model(name, size)
    else:
        model = timm.create_model(sizes_module.TIMM_NAMES[name], img_size=size)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def quick_timm_model(name, size):
    """timm's `MlpMixer` with the registry's arguments for `name` (its
    gMLP and Mixer layers and ratios), at the `--quick` depth and width."""
    from timm.layers import GatedMlp
    from timm.models.mlp_mixer import MlpMixer
    from timm.models.mlp_mixer import SpatialGatingBlock

    config = sizes_module.image_config(name, quick=True)
    layers = dict(mlp_ratio=(0.5, 4.0))
    if config["kind"] == "gmlp":
        layers = dict(mlp_ratio=6, block_layer=SpatialGatingBlock, mlp_layer=GatedMlp)
    return MlpMixer(
        img_size=size,
        patch_size=16,
        num_blocks=config["num_blocks"],
        embed_dim=config["hidden_dim"],
        **layers,
    )


def timm_reference(context, name):
    """Saves the weights, raw images and timm's logits (float64 on the CPU;
    float32 on the card with TF32 off, and at PyTorch's default) for the
    Keras workers; returns timm's own float32 errors."""
    if missing("timm"):
        return missing("timm")
    import numpy as np
    import torch
    from safetensors.torch import save_file

    size, workdir = context.size, context.workdir
    model = timm_model(torch, name, context.quick)
    shape = (size["parity_batch"], size["image_size"], size["image_size"], 3)
    images = np.random.default_rng(0).integers(0, 256, shape).astype("float32")
    normalized = (torch.from_numpy(images).permute(0, 3, 1, 2) / 255.0 - 0.5) / 0.5
    with torch.no_grad():
        logits = {"float64": model.double()(normalized.double()).numpy()}
        model.float().to(torch_timing.device(torch))
        on_device = normalized.to(torch_timing.device(torch))
        for label, highest in (("float32_highest", True), ("float32_default", False)):
            with torch_timing.float32_precision(torch, highest):
                logits[label] = model(on_device).cpu().numpy()
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(workdir, f"timm_{name}.safetensors"))
    np.savez(os.path.join(workdir, f"timm_{name}.npz"), images=images, **logits)
    errors = {
        f"timm_{label}_error": relative_error(logits[label], logits["float64"])
        for label in ("float32_highest", "float32_default")
    }
    return dict(
        errors,
        value=errors["timm_float32_highest_error"],
        unit="relative error of timm's float32 (TF32 off) logits",
        model=name,
    )


def image_step(torch, model, batch, mode, precision, compiled):
    """One training step (forward, backward, AdamW) or one inference
    forward of `model` on a random batch on the card."""
    device = torch_timing.device(torch)
    size = batch["image_size"]
    x = torch.randn(batch["image_batch"], 3, size, size, device=device)
    y = torch.randint(0, 1000, (batch["image_batch"],), device=device)
    return throughput.torch_image_step(torch, model, x, y, mode, precision, compiled)


def timm_images(context, name, mode, precision, compiled):
    """timm's images/s, eager or under torch.compile."""
    if missing("timm"):
        return missing("timm")
    import torch

    size, quick = context.size, context.quick
    torch_timing.reset_peak_memory(torch)
    model = timm_model(torch, name, quick).to(torch_timing.device(torch))
    step = image_step(torch, model, size, mode, precision, compiled)
    seconds = torch_timing.event_seconds(torch, step, size["warmup"], size["repeats"])
    row = image_row(name, mode, precision, size, seconds, quick, torch)
    return dict(row, runner="timm-compile" if compiled else "timm-eager")


def image_row(name, mode, precision, size, seconds, quick, torch=None):
    rate = size["image_batch"] / seconds
    flops = sizes_module.image_flops(name, quick, training=mode == "train")
    row = dict(model=name, mode=mode, precision=precision, value=round(rate, 1))
    row.update(unit="images/s", tflops=round(flops * rate / 1e12, 2))
    if torch is not None:
        row["peak_memory_gb"] = torch_timing.peak_memory_gb(torch)
    return row


def bert_tokens(context, name, mode, precision, compiled):
    """BertForMaskedLM base's training tokens/s, eager or compiled."""
    if missing("transformers"):
        return missing("transformers")
    import torch

    size, quick = context.size, context.quick
    torch_timing.reset_peak_memory(torch)
    step = bert_step(torch, size, precision, compiled, quick)
    seconds = torch_timing.event_seconds(torch, step, size["warmup"], size["repeats"])
    row = text_row("bert_base", precision, size, seconds, quick, torch)
    return dict(row, runner="bert-compile" if compiled else "bert-eager")


def bert_step(torch, size, precision, compiled, quick):
    """One BertForMaskedLM training step at the check's batch and length,
    BERT's 15% of the tokens predicted (the rest labelled -100)."""
    from transformers import BertConfig
    from transformers import BertForMaskedLM

    shape = sizes_module.text_config("bert_base", quick)
    config = BertConfig(
        hidden_size=shape["hidden_dim"],
        num_hidden_layers=shape["num_blocks"],
        num_attention_heads=shape["heads"],
        intermediate_size=shape["mlp_dim"],
    )
    device = torch_timing.device(torch)
    torch.manual_seed(0)
    model = BertForMaskedLM(config).to(device).train()
    batch, length = size["text_batch"], size["text_length"]
    ids = torch.randint(1000, config.vocab_size, (batch, length), device=device)
    labels = torch.full_like(ids, -100)
    picked = torch.rand(batch, length, device=device).argsort(-1)[
        :, : size["masked_per_sequence"]
    ]
    labels.scatter_(1, picked, ids.gather(1, picked))
    forward = torch.compile(model) if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    autocast = torch.autocast(device, torch.bfloat16, enabled=precision == "bfloat16")

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = forward(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()

    return step


def text_row(name, precision, size, seconds, quick, torch=None):
    rate = size["text_batch"] * size["text_length"] / seconds
    flops = sizes_module.text_flops_per_token(name, quick, training=True)
    row = dict(model=name, mode="train", precision=precision, value=round(rate))
    row.update(
        unit="tokens/s", tflops=round(flops * rate / 1e12, 2), batch=size["text_batch"]
    )
    if torch is not None:
        row["peak_memory_gb"] = torch_timing.peak_memory_gb(torch)
    return row
