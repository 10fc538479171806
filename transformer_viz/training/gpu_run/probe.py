"""Before a GPU run trains: the largest batch that fits, and whether the fused attention kernels
take the model's masks (the log says so either way)."""

from __future__ import annotations

import torch


def _fused_attention_runs(model, batch, amp: str) -> bool:
    """Whether the model's forward pass runs with only the fused attention kernels allowed (flash,
    memory-efficient, cuDNN; no math fallback), padding and causal masks included."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from transformer_viz.training.common import autocast

    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    try:
        with torch.no_grad(), autocast(batch.src.device, amp), sdpa_kernel(fused):
            model(batch.src[:8], batch.tgt_in[:8])
        return True
    except RuntimeError as exc:
        if isinstance(exc, torch.OutOfMemoryError):
            raise
        return False


def fitting_batch_tokens(model, examples, batch_tokens: int, device, amp: str, log=print) -> int:
    """The largest of batch_tokens, batch_tokens / 2, … for which the batch with the most padded
    positions passes forward and backward on ``device`` (CUDA only; the CPU keeps batch_tokens)."""
    from transformer_viz.models.losses import label_smoothed_loss
    from transformer_viz.text.corpora import make_batch, token_batches
    from transformer_viz.training.common import attention_kernel, autocast

    if device.type != "cuda":
        return batch_tokens
    cfg = model.cfg

    def padded(idx: list[int]) -> int:
        return len(idx) * max(max(len(examples[i][0]), len(examples[i][1]) + 1) for i in idx)

    while batch_tokens >= 1000:
        worst = max(token_batches(examples, batch_tokens, shuffle=False), key=padded)
        batch = make_batch([examples[i] for i in worst], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        batch = batch.to(device)
        try:
            fused = _fused_attention_runs(model, batch, amp)
            with autocast(device, amp), attention_kernel(device):
                logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            label_smoothed_loss(logits, batch.tgt_out, 0.1, cfg.pad_id).backward()
            model.zero_grad(set_to_none=True)
            log(f"batch of {batch_tokens} tokens fits: peak "
                f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB for the worst batch "
                f"{tuple(batch.src.shape)} + {tuple(batch.tgt_in.shape)}; "
                + ("fused attention kernels take the masked attention" if fused else
                   "NO fused attention kernel takes it: PyTorch falls back to the math kernel"))
            return batch_tokens
        except torch.OutOfMemoryError:
            model.zero_grad(set_to_none=True)
            del batch
            torch.cuda.empty_cache()
            log(f"batch of {batch_tokens} tokens does not fit; halving")
            batch_tokens //= 2
    raise RuntimeError("not even a batch of 1,000 tokens fits")
