"""The KV manager of hybrid models (linear attention / Mamba beside softmax attention), as vLLM V1's hybrid
KV-cache manager holds them: one pool of uniform pages shared by attention KV and recurrent state.

vLLM's layout (the reference; file names under vllm/):
* page alignment (`model_executor/models/config.py`, HybridAttentionMambaModelConfig.verify_and_update_config):
  one layer's state page (conv + temporal state of one request, models.mixers) must fit one attention page,
  so the attention block grows to `block_tokens = 16 · ceil(state page / (16 · attention bytes per token and
  layer))` tokens and the state page is padded to the attention page ("Setting attention block size to N
  tokens to ensure that attention page size is >= mamba page size");
* KV-cache groups (`v1/core/kv_cache_utils.py`, _get_kv_cache_groups_uniform_page_size): layers of one kind
  form groups of `group_size` layers, group_size = the fewest layers of a kind (or the most, when the most are
  < 1.5 × the fewest), the last group of a kind padded; each of the group_size cache tensors is shared by one
  layer of every group, so one block id costs group_size pages on every GPU;
* per request (`v1/kv_cache_interface.py` MambaSpec.max_memory_usage_bytes, `v1/core/single_type_kv_cache_manager.py`
  MambaManager, mamba_cache_mode "none"): every attention group holds ceil(tokens / block_tokens) blocks and
  every state group 1 + num_speculative_blocks blocks (one per draft position: a rejection selects the
  accepted position's state, models.mixers.state_copies), from admission until release.

So a request of T tokens holds `attention_groups · ceil(T / block_tokens) + state_groups · (1 + γ)` blocks of
`block_bytes` = group_size · block_tokens · (attention bytes per token and layer) each; the pool has
free memory / block_bytes of them. Approximations: a colocated drafter's KV per token is added to the attention
pages (vLLM gives a draft model's layers their own group); pipeline stages are sized by the stage with the
most layers of each kind; sliding-window layers count as full attention (the hybrids modelled have none).
Prefix caching of hybrid models (vLLM's mamba_cache_mode "align") and host memory are not modelled: refused.
Bulks assume plain paged growth, so this pool is not `bulk_capable` (steps run one by one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from models.mixers import LINEAR_ATTENTION, MAMBA
from models.spec import ModelSpec, activation_bytes, dtype_bytes, kv_heads_per_gpu
from models.step import Parallelism
from simulator.core.kv.block_pool import BlockPool

KERNEL_BLOCK_ALIGNMENT = 16   # vLLM rounds the attention block to multiples of 16 tokens (FlashAttention's limit)


@dataclass(frozen=True)
class HybridPageLayout:
    """One replica's unified page layout (module docstring); bytes per GPU."""

    block_tokens: int              # attention tokens per block
    group_size: int                # layers sharing one block id
    attention_groups: int
    state_groups: int
    state_copies: int              # 1 + draft positions (vLLM's speculative blocks)
    block_bytes: float             # one block id: group_size pages on every GPU
    total_blocks: int

    @property
    def state_blocks_per_request(self) -> int:
        return self.state_groups * self.state_copies

    @property
    def kv_tokens(self) -> int:
        """Tokens the pool would hold with no request state (the paged pool's `kv_tokens`)."""
        return self.total_blocks // self.attention_groups * self.block_tokens

    def max_requests(self, tokens: int) -> int:
        """Requests of `tokens` tokens each that fit at once (vLLM's "maximum concurrency")."""
        per = self.attention_groups * -(-tokens // self.block_tokens) + self.state_blocks_per_request
        return self.total_blocks // per


def group_size(layer_counts: list[int]) -> int:
    """vLLM's group size for kinds of `layer_counts` layers (module docstring)."""
    fewest, most = min(layer_counts), max(layer_counts)
    return most if most < 1.5 * fewest else fewest


def hybrid_page_layout(target: ModelSpec, par: Parallelism, dtype: str, kv_dtype: str, free_bytes_per_gpu: float,
                       draft_tokens: int = 0, copies: int = 1, extra_kv_bytes_per_token: float = 0.0) -> HybridPageLayout:
    """The layout of `target` on one replica with `free_bytes_per_gpu` left after the weights, speculating
    `draft_tokens` drafts per step with `copies` temporal states per request (models.mixers.state_copies);
    `extra_kv_bytes_per_token` per GPU: a colocated drafter's KV (module docstring)."""
    attention_kinds = ("full_attention", "sliding_attention")
    attn = max(target.stage_layer_counts(par.pp, attention_kinds))
    state_kinds = [k for k in (LINEAR_ATTENTION, MAMBA) if target.mixer_layers(k)]
    if not attn or not state_kinds:
        raise ValueError(f"{target.name}: the hybrid page layout needs attention and state layers")
    if len(state_kinds) > 1:
        raise ValueError(f"{target.name}: mixing linear-attention and Mamba layers is not modelled")
    kind = state_kinds[0]
    states = max(target.stage_layer_counts(par.pp, (kind,)))
    kv_heads = 1 if target.is_mla else kv_heads_per_gpu(target, par.tp)
    per_layer = target.kv_elements_per_token_per_layer() if target.is_mla else 2 * kv_heads * target.head_dim
    attn_token = per_layer * dtype_bytes(kv_dtype) + extra_kv_bytes_per_token / attn
    from models.mixers import state_bytes
    state_page = state_bytes(target, kind, par.tp, activation_bytes(dtype), draft_tokens)
    align = KERNEL_BLOCK_ALIGNMENT
    block_tokens = align * math.ceil(state_page / (align * attn_token))
    size = group_size([attn, states])
    block_bytes = size * block_tokens * attn_token
    total = int(free_bytes_per_gpu // block_bytes) * par.attention_dp
    return HybridPageLayout(block_tokens, size, -(-attn // size), -(-states // size), copies, block_bytes, total)


class HybridStatePool(BlockPool):
    """A BlockPool whose blocks are the unified pages of `layout`: a request's attention blocks grow with its
    tokens, its state blocks are held from admission to release (module docstring)."""

    def __init__(self, state, layout: HybridPageLayout):
        super().__init__(state, layout.total_blocks, layout.block_tokens)
        self.layout = layout
        self.bulk_capable = False

    @property
    def free_tokens(self) -> int:
        """KV tokens the free blocks hold: a token takes a block slot in each attention group (the requests'
        state blocks are held already)."""
        return (self.total_blocks - self.used_blocks) // self.layout.attention_groups * self.block_size

    def blocks_for(self, tokens):
        return self.layout.attention_groups * -(-tokens // self.block_size) + self.layout.state_blocks_per_request

    def blocks(self, ids, tokens):
        if self.multi_sample:
            raise ValueError("workload.parallel_samples > 1 is not modelled for hybrid models")
        return self.blocks_for(tokens)

    def shrink(self, r: int, tokens: int) -> None:
        keep = int(self.blocks_for(tokens))
        if self.s.blocks[r] > keep:
            self.used_blocks -= int(self.s.blocks[r]) - keep
            self.s.blocks[r] = keep
