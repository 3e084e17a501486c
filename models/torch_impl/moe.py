"""Routed mixture-of-experts MLP block (Mixtral / Qwen2-MoE style, without shared experts).

Each token's hidden state goes through a softmax router (`kernels.router_topk`), is sent to its top-k
experts (each a SwiGLU MLP), and the expert outputs are summed with the router weights. The computation is
grouped by expert — one GEMM chain per expert over the tokens routed to it, as a grouped-GEMM kernel
does — so its cost follows the per-expert token counts; `tests/models/test_torch_model_moe.py` checks it
against a per-token dense loop.
"""
from __future__ import annotations

import torch
from torch import nn

from models.torch_impl import kernels


class MoEBlock(nn.Module):
    """Parameters: router [experts, hidden]; gate, up [experts, inter, hidden]; down [experts, hidden, inter]."""

    def __init__(self, hidden_size: int, intermediate_size: int, num_experts: int, top_k: int,
                 renormalize: bool = True):
        super().__init__()
        if min(hidden_size, intermediate_size, num_experts) < 1 or not 1 <= top_k <= num_experts:
            raise ValueError(f"MoEBlock needs positive sizes and 1 <= top_k <= num_experts, got "
                             f"hidden={hidden_size}, inter={intermediate_size}, experts={num_experts}, "
                             f"top_k={top_k}")
        self.top_k, self.renormalize = top_k, renormalize
        zeros = lambda *s: nn.Parameter(torch.zeros(*s), requires_grad=False)  # noqa: E731
        self.router = zeros(num_experts, hidden_size)
        self.gate = zeros(num_experts, intermediate_size, hidden_size)
        self.up = zeros(num_experts, intermediate_size, hidden_size)
        self.down = zeros(num_experts, hidden_size, intermediate_size)

    @property
    def num_experts(self) -> int:
        return self.router.shape[0]

    def expert(self, index: int, x: torch.Tensor) -> torch.Tensor:
        """Expert `index`'s SwiGLU MLP on x [tokens, hidden]."""
        act = kernels.swiglu(kernels.linear(x, self.gate[index]), kernels.linear(x, self.up[index]))
        return kernels.linear(act, self.down[index])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, expert_ids = kernels.router_topk(x, self.router, self.top_k, self.renormalize)
        out = torch.zeros_like(x)
        flat_ids = expert_ids.reshape(-1)
        flat_weights = weights.reshape(-1)
        token_of = torch.arange(x.shape[0], device=x.device).repeat_interleave(self.top_k)
        order = torch.argsort(flat_ids, stable=True)
        counts = torch.bincount(flat_ids, minlength=self.num_experts).tolist()
        start = 0
        for e, count in enumerate(counts):
            if count:
                picked = order[start:start + count]
                tokens = token_of[picked]
                out.index_add_(0, tokens, self.expert(e, x[tokens]) * flat_weights[picked, None])
            start += count
        return out
