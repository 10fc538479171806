"""Weights in the compact form that comes back from a borrowed GPU: int8 per row, in shards of at
most
16 MiB, with a JSON manifest of SHA-256 hashes.

Every matrix W (rows r) is stored as q = round(W / s_r) in int8 with a per-row scale s_r = 2^e_r,
the
smallest power of two with max|W_r| / s_r ≤ 127; vectors (biases, LayerNorm gains) are stored as
float16.
A power-of-two scale costs at most one bit of resolution against the tightest scale, and buys
exactness:
q · 2^e has at most 7 significant bits, so the restored weights are exactly representable in float16
and
bfloat16. The weights scored on the GPU, restored here, and written as a float16 checkpoint are
therefore
the same numbers, bit for bit.

No pickle: shards are safetensors, the manifest is JSON.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

SHARD_LIMIT = 16 * 2**20  # the largest file a GPU command may send back
HEADER_MARGIN = 256 * 2**10  # room for the safetensors header (tensor names, shapes, offsets)
Q_SUFFIX, EXP_SUFFIX = ".q", ".exp"  # int8 values and int16 base-2 exponents of the row scales
INT8_MAX = 127
# q · 2^e stays exact in float16 down to its subnormals' spacing, 2^-24; a row smaller than that is
# rounded
# to multiples of 2^-24 (it is zero in float16 anyway).
FLOAT16_MIN_EXP = -24


def quantise(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Float tensors -> the compact tensors: matrices as int8 + per-row exponent, vectors as
    float16."""
    out = {}
    for name, w in state.items():
        w = w.detach().float().cpu()
        if w.dim() != 2:
            half = w.half()
            if not bool(torch.isfinite(half).all()):
                raise ValueError(f"{name} does not fit float16")
            out[name] = half.contiguous()
            continue
        peak = w.abs().amax(dim=1).clamp_min(torch.finfo(torch.float32).tiny)  # (rows,)
        exponent = torch.ceil(torch.log2(peak / INT8_MAX)).clamp_min(FLOAT16_MIN_EXP)  # (rows,)
        exponent = exponent.to(torch.int16)
        scale = torch.ldexp(torch.ones_like(peak), exponent.to(torch.int32))  # (rows,) exactly 2^e
        q = torch.round(w / scale[:, None]).clamp_(-INT8_MAX, INT8_MAX)  # (rows, cols)
        out[name + Q_SUFFIX] = q.to(torch.int8).contiguous()
        out[name + EXP_SUFFIX] = exponent.contiguous()
    return out


def dequantise(compact: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The compact tensors -> float32 weights (exactly q · 2^e, and exactly the float16 vectors)."""
    out = {}
    for name, t in compact.items():
        if name.endswith(EXP_SUFFIX):
            continue
        if name.endswith(Q_SUFFIX):
            base = name[: -len(Q_SUFFIX)]
            exponent = compact[base + EXP_SUFFIX].to(torch.int32)[:, None]  # (rows, 1)
            out[base] = torch.ldexp(t.float(), exponent)  # (rows, cols)
        else:
            out[name] = t.float()
    return out


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_shards(
    compact: dict[str, torch.Tensor], directory: str | Path, prefix: str, limit: int = SHARD_LIMIT
) -> list[dict]:
    """Safetensors files of at most ``limit`` bytes, filled in order; [{"file", "bytes",
    "sha256"}]."""
    from safetensors.torch import save_file

    groups: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, t in compact.items():
        nbytes = t.numel() * t.element_size()
        if nbytes > limit - HEADER_MARGIN:
            raise ValueError(f"{name} alone ({nbytes:,} bytes) is larger than a shard")
        if groups[-1] and size + nbytes > limit - HEADER_MARGIN:
            groups.append({})
            size = 0
        groups[-1][name] = t
        size += nbytes
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for i, group in enumerate(groups, start=1):
        path = directory / f"{prefix}.weights-{i}-of-{len(groups)}.safetensors"
        save_file(group, str(path))
        if path.stat().st_size > limit:
            raise ValueError(
                f"{path} is {path.stat().st_size:,} bytes, over the limit of {limit:,}"
            )
        files.append({"file": path.name, "bytes": path.stat().st_size, "sha256": sha256(path)})
    return files


class HashMismatch(RuntimeError):
    """A shard that is missing, or whose bytes are not the ones the manifest describes."""


def read_shards(directory: str | Path, files: list[dict]) -> dict[str, torch.Tensor]:
    """The compact tensors of the shards a manifest lists, each checked against its SHA-256
    first."""
    from safetensors.torch import load_file

    directory = Path(directory)
    compact = {}
    for entry in files:
        path = directory / entry["file"]
        if not path.is_file():
            raise HashMismatch(f"{path} is missing")
        found = sha256(path)
        if found != entry["sha256"]:
            raise HashMismatch(f"{path}: SHA-256 {found}, the manifest says {entry['sha256']}")
        compact.update(load_file(str(path)))
    return compact


def write_manifest(path: str | Path, manifest: dict) -> Path:
    path = Path(path)
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
