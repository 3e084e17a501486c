"""Choice of the layers the self-speculative drafter skips, on calibration texts held out by file.

Candidates, for each skip count k in `counts`, among the inner layers 1 … L−2 (the first and last layer
are always kept, as in Draft & Verify / SWIFT, whose searches rarely skip them):
  - "low-influence": the k layers whose output changes their input least, by block influence
    BI_l = mean over tokens of 1 − cos(h_l, h_{l+1}) (ShortGPT) measured on one full target pass;
  - "interleaved": k layers spread evenly over the inner layers.
Each candidate's per-token agreement α with the full target's argmax is measured on the calibration
texts (prompt + the stdlib's real function body). The chosen candidate maximizes the speedup proxy
  max over γ in 1…8 of  (1 − α^{γ+1}) / (1 − α)  /  (1 + γ · (L − k) / L),
i.e. tokens per step under i.i.d. acceptance α divided by step cost in target-pass units, where a draft
pass is priced as its fraction of kept layers. The proxy (i.i.d. α, layer-count cost, no LM-head cost)
only ranks candidates; the measured traces report the chosen drafter's real acceptance.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from models.torch_impl.qwen2 import Qwen2Model


def speedup_proxy(alpha: float, kept_fraction: float, gammas: Sequence[int] = tuple(range(1, 9))) -> float:
    best = 0.0
    for g in gammas:
        tokens = g + 1 if alpha >= 1.0 else (1 - alpha ** (g + 1)) / (1 - alpha)
        best = max(best, tokens / (1 + g * kept_fraction))
    return best


def block_influence(model: Qwen2Model, texts: Sequence[Sequence[int]]) -> np.ndarray:
    """BI_l per layer, averaged over all tokens of `texts`."""
    totals, count = np.zeros(model.cfg.num_layers), 0
    for ids in texts:
        hidden: list[torch.Tensor] = []
        model.forward_full(torch.tensor(list(ids)), hidden_out=hidden, first_logit_row=len(ids) - 1)
        for layer in range(model.cfg.num_layers):
            cos = torch.nn.functional.cosine_similarity(hidden[layer], hidden[layer + 1], dim=-1)
            totals[layer] += float((1 - cos).sum())
        count += len(ids)
    return totals / count


def candidates(num_layers: int, counts: Sequence[int], influence: np.ndarray) -> list[tuple[str, tuple[int, ...]]]:
    inner = np.arange(1, num_layers - 1)
    out = []
    for k in counts:
        if not 1 <= k <= len(inner):
            raise ValueError(f"skip counts must lie in 1…{len(inner)}, got {k}")
        low = tuple(sorted(int(i) for i in inner[np.argsort(influence[inner], kind="stable")[:k]]))
        spread = tuple(sorted({int(inner[int(round(x))]) for x in np.linspace(0, len(inner) - 1, k)}))
        out += [("low-influence", low), ("interleaved", spread)]
    return out


def choose_skip_layers(model: Qwen2Model, texts: Sequence[Sequence[int]], counts: Sequence[int]) -> dict:
    """Evaluate the candidates on `texts`; returns {"skip_layers": [...], "candidates": [...report...]}."""
    if not texts:
        raise ValueError("layer-skip calibration needs at least one text")
    influence = block_influence(model, texts)
    targets = [torch.argmax(model.forward_full(torch.tensor(list(ids))), dim=-1) for ids in texts]
    report = []
    for pattern, layers in candidates(model.cfg.num_layers, counts, influence):
        agree = total = 0
        for ids, target in zip(texts, targets):
            pred = torch.argmax(model.forward_full(torch.tensor(list(ids)), skip_layers=layers), dim=-1)
            agree += int((pred == target).sum())
            total += len(ids)
        alpha = agree / total
        kept = 1 - len(layers) / model.cfg.num_layers
        report.append({"pattern": pattern, "skip_layers": list(layers), "agreement": alpha,
                       "speedup_proxy": speedup_proxy(alpha, kept)})
    best = max(report, key=lambda r: r["speedup_proxy"])
    return {"skip_layers": best["skip_layers"], "pattern": best["pattern"],
            "block_influence": [float(x) for x in influence], "candidates": report,
            "calibration_tokens": int(sum(len(t) for t in texts))}
