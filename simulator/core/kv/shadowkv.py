"""ShadowKV's KV layout (Sun et al. 2024, arXiv 2410.21465; `cluster.kv_cache.layout.kind: shadowkv`): the
target's pre-RoPE keys kept on the GPU as a rank-r factor, values offloaded to host memory. Its decode and
prefill passes are priced by simulator.cost.shadowkv; here is what it holds.

Memory (`gpu_kv_fraction`): per token and layer the GPU keeps the key factor's r elements and one landmark
(the mean post-RoPE key of a chunk, D = kv heads × head dim elements) per `chunk_tokens` tokens, instead of
2·D for keys and values: the fraction (r + D/chunk) / (2·D) of the paged KV per token (TP/PP split as the
paged KV). The GPU-resident part is counted in blocks of `block_size` tokens by a plain block pool. Not
counted: the per-request right factor (r × D per layer, independent of length), the static outlier chunks
kept dense, and the host memory holding the values (assumed large enough). MLA models are refused: their
latent cache has no separate keys.
"""
from __future__ import annotations

from models.spec import ModelSpec, kv_heads_per_gpu
from simulator.core.kv.block_pool import PagedLayout


def gpu_kv_fraction(spec: ModelSpec, rank: int, chunk_tokens: int) -> float:
    """ShadowKV's GPU KV bytes per token as a fraction of the paged cache's (module docstring)."""
    d = kv_heads_per_gpu(spec, 1) * spec.head_dim
    return (rank + d / chunk_tokens) / (2.0 * d)


class ShadowKVLayout(PagedLayout):
    def gpu_fraction(self, target, cfg) -> float:
        return gpu_kv_fraction(target, cfg.rank, cfg.chunk_tokens)

    def refusal(self, target, cfg) -> str | None:
        if target.is_mla:
            return f"shadowkv splits keys from values; {target.name}'s MLA latent cache has no separate keys"
        return None
