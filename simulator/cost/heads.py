"""Draft-head families beyond EAGLE and Medusa: what one head pass costs and what the heads weigh.

Each style is a builder in `HEAD_STYLES` (drafter `head`, `style:`); the `autoregressive` (EAGLE) and
`parallel` (Medusa) builders live in simulator.cost.drafters. h = the target's hidden size, V its vocabulary;
GEMMs are sharded over the target's tp like the target's own (the logits all-gather is not priced).

- `autoregressive` with `layers` > 1 (KOALA's multi-layer draft heads): `layers` decoder layers of the
  target's width + the target's LM head per pass, one pass per draft depth; own KV cache per layer.
- `autoregressive` with `tokens_per_pass` k > 1 (Falcon's semi-autoregressive head): each pass drafts k
  tokens per request (k query tokens through the head), so a chain of γ tokens takes ceil(γ/k) passes
  (widths k, k, …, the remainder). Chains only (Falcon's own tree is not modelled).
- `sequential` (Hydra's sequentially dependent heads; IBM's MLP speculator is the same structure): one
  head per draft depth, each an MLP on the concatenation of the hidden state and the previous draft
  token's embedding — a 2h→h GEMM, `layers`−1 residual h→h GEMMs — and its own LM head (h→V, Medusa's
  convention), run one pass per depth over that depth's expanded nodes. No KV. Hydra++'s extra
  prefix-attention decoder layer is not modelled (use `autoregressive` for a decoder-layer head).
- `rnn` (Clover): per pass, `layers` attention-decoder blocks (q, k, v, o projections: four h→h GEMMs
  of the new token against the hidden state) and the target's shared LM head. Not priced: Clover's
  augmenting block (one transformer layer run once per step, about 1/L of a target pass, e.g. 3 % for a
  32-layer target) and the cross-attention's softmax over one key.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.ops import GEMM, Op
from models.spec import ModelSpec, dense_weight_dtype, dtype_bytes
from models.step import Parallelism
from simulator.cost.drafters import TokenwiseHeadCost
from simulator.cost.step_cost import _price, zero_cost


@dataclass
class GemmHeadCost(TokenwiseHeadCost):
    """A head pass made of GEMMs only: `gemms` = ((name, n_out, k_in), …) applied to every head-input
    token (n_out sharded over tp), no attention, no KV."""

    spec: ModelSpec
    parallelism: Parallelism
    latency: object
    dtype: str
    gemms: tuple[tuple[str, int, int], ...]
    _memo: dict = field(default_factory=dict, repr=False)

    def dense(self, num_tokens: int, logits_tokens: int) -> np.ndarray:
        t = int(logits_tokens)
        if t == 0:
            return zero_cost()
        cost = self._memo.get(t)
        if cost is None:
            w, a, tp = dtype_bytes(dense_weight_dtype(self.dtype)), 2.0, self.parallelism.tp   # heads are not experts
            ops = [Op.make(GEMM, name, 2.0 * t * (n / tp) * k, a * t * (k + n / tp) + w * k * n / tp, 1,
                           m=t, n=n / tp, k=k) for name, n, k in self.gemms]
            cost = self._memo[t] = _price(self.latency, ops)
        return cost

    def weight_params(self) -> int:
        return int(sum(n * k for _, n, k in self.gemms))


def sequential_gemms(target: ModelSpec, layers: int) -> tuple[tuple[str, int, int], ...]:
    h, v = target.hidden_size, target.vocab_size
    return (("hydra_in", h, 2 * h),) + (("hydra_mlp", h, h),) * (layers - 1) + (("hydra_lm_head", v, h),)


def rnn_gemms(target: ModelSpec, layers: int) -> tuple[tuple[str, int, int], ...]:
    h, v = target.hidden_size, target.vocab_size
    return (("clover_qkvo", h, h),) * (4 * layers) + (("lm_head", v, h),)


def _sequential(d, target: ModelSpec, par: Parallelism, latency, dtype: str):
    from simulator.cost.drafters import DrafterBuild
    cost = GemmHeadCost(target, Parallelism(par.tp, 1), latency, dtype, sequential_gemms(target, d.layers))
    # one head per draft depth: gamma heads of these weights
    return DrafterBuild(cost, None, d.gamma * cost.weight_params() * dtype_bytes(dense_weight_dtype(dtype)) / par.tp, 0.0)


def _rnn(d, target: ModelSpec, par: Parallelism, latency, dtype: str):
    from simulator.cost.drafters import DrafterBuild
    cost = GemmHeadCost(target, Parallelism(par.tp, 1), latency, dtype, rnn_gemms(target, d.layers))
    # LM head shared; + the augmenting block, a decoder layer of the target's (its first)
    own = 4 * d.layers * target.hidden_size ** 2 * dtype_bytes(dense_weight_dtype(dtype)) \
        + target.with_layers(1).decoder_weight_bytes(dtype)
    return DrafterBuild(cost, None, own / par.tp, 0.0)


# head style -> builder(drafter section, target, parallelism, latency, dtype) (EAGLE/Medusa: drafters._head)
HEAD_STYLES = {"sequential": _sequential, "rnn": _rnn}
