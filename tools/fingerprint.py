"""A fingerprint of the numerics the course relies on: one short hash per
operation.

    python -m tools.fingerprint            prints {"operation": "hash", ...} as
    JSON

Each hash covers the exact bits of one result: the matrix products, softmax,
LayerNorm, exp, sqrt, GELU, a 1-D convolution, PyTorch's fused attention, the
backward passes of the course's layers, cross-entropy with label smoothing,
Adam, a few training steps of ``utils.model.Transformer`` (the model chapters
7-9 train), and NumPy's exp, sin and matrix product. Two runs that print the
same fingerprint compute these bit for bit alike.
``tests/test_numeric_mode.py`` compares fingerprints across numeric modes and
emulated CPUs.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import torch
import torch.nn.functional as F


def _h(x) -> str:
    if isinstance(x, torch.Tensor):
        x = x.detach().contiguous().numpy()
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()[:12]


def fingerprint() -> dict[str, str]:
    from utils.model import Transformer

    torch.manual_seed(0)
    out: dict[str, str] = {}
    x = torch.randn(4, 48, 64, requires_grad=True)  # (B, T, d)
    w = torch.randn(64, 96)
    out["randn"] = _h(x)
    out["matmul"] = _h(x @ w)
    out["bmm"] = _h(torch.bmm(x, x.transpose(1, 2)))
    out["softmax"] = _h(torch.softmax(x, -1))
    out["layer_norm"] = _h(F.layer_norm(x, (64,)))
    out["exp"] = _h(x.exp())
    out["sqrt"] = _h(x.abs().sqrt())
    out["gelu"] = _h(F.gelu(x))
    out["conv1d"] = _h(F.conv1d(x.transpose(1, 2), torch.randn(8, 64, 3)))
    q = x.view(4, 48, 4, 16).transpose(1, 2)  # (B, h, T, d_head)
    out["sdpa"] = _h(F.scaled_dot_product_attention(q, q, q, is_causal=True))
    loss = (torch.softmax(x @ x.transpose(1, 2), -1) @ x).pow(2).mean()
    loss = loss + F.layer_norm(x, (64,)).pow(3).mean()
    loss.backward()
    out["backward"] = _h(x.grad)
    logits = torch.randn(64, 17, requires_grad=True)
    target = torch.randint(0, 17, (64,))
    F.cross_entropy(logits, target, label_smoothing=0.1).backward()
    out["cross_entropy"] = _h(logits.grad)
    params = [torch.randn(300, requires_grad=True) for _ in range(2)]
    adam = torch.optim.Adam(params, lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    for _ in range(3):
        for p in params:
            p.grad = torch.randn(300)
        adam.step()
    out["adam"] = _h(torch.cat([p.detach() for p in params]))

    model = Transformer(20, 20, d_model=32, num_heads=4, num_layers=2, d_ff=64)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = torch.randint(3, 20, (8, 10))
    tgt = torch.randint(3, 20, (8, 9))
    for _ in range(3):
        logits = model(src, tgt[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    out["transformer_training"] = _h(
        torch.cat([p.detach().flatten() for p in model.parameters()])
    )

    a = np.random.default_rng(0).standard_normal((64, 96))
    out["np_exp"] = _h(np.exp(a))
    out["np_exp32"] = _h(np.exp(a.astype(np.float32)))
    out["np_sin"] = _h(np.sin(a))
    out["np_matmul"] = _h(a @ a.T)
    return out


if __name__ == "__main__":
    print(json.dumps(fingerprint(), sort_keys=True))
