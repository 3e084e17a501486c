"""The op graph of one engine step: which kernels run, with their per-GPU shapes, FLOPs and bytes moved.

`dense_ops` lists what depends only on the number of tokens (GEMMs, norms, activations, MoE, LM head,
sampling, collectives); `attention_ops` lists the attention kernels, which depend on the contexts;
`step_ops` joins them. Every op is per GPU (shapes divided by tensor parallelism) and `count` is the
number of identical instances in the whole forward pass over all pipeline stages (usually num_layers),
so the serial cost of a step is Σ count · seconds(op).

Conventions and approximations (each is named where it is made):
* Weights are stored in `dtype` (a format that quantizes only the routed experts, mxfp4: those, the other
  weights in bf16; `models.dtypes.EXPERT_ONLY_DTYPES`), except the embedding and the LM head, 16-bit under
  every quantized dtype (`models.dtypes.vocab_weight_dtype`: the LM head GEMM then carries `vocab_16bit` = 1 and
  is priced as a bf16 GEMM); activations between kernels are 16-bit (fp32 for fp32
  models), see `models.spec.activation_bytes`; the KV cache is stored in `kv_dtype` (default:
  `models.spec.kv_cache_dtype`).
* GEMM bytes = activations in + activations out + weights, each read or written once (ideal reuse).
* Element-wise FLOP counts are nominal (a few per element); those ops are memory-bound anyway.
* Tensor parallelism follows Megatron/vLLM: QKV and gate/up column-parallel, O and down row-parallel,
  two all-reduces per layer, vocab-parallel embedding (one more all-reduce) and LM head (logits
  gathered); with ep = 1 MoE experts are sharded over TP ranks; MLA's down-projections (q_a, kv_a) are
  replicated on every rank.
* Expert parallelism (par.ep > 1, layout in `models.step.Parallelism`): ops are those of one GPU of one
  data-parallel attention group. Approximation: the step's tokens, sequences and contexts are split
  evenly over the ep/tp groups (fractional shares; the real step waits for the busiest group, which
  holds at least ceil(seqs / groups) sequences, so small batches are under-priced). Each rank's routed
  experts process the expected rows of uniform routing, T·k/ep over E/ep local experts of which
  (E/ep)·(1 − (1 − k/E)^T) are touched (T = the whole step's tokens); rank-to-rank imbalance (the
  straggler) is not in these expectations, see `moe_ep_ops_from_load` for a given routing. Every MoE
  layer adds a dispatch and a combine ALLTOALL; a token is sent once to each other rank holding at least
  one of its experts (DeepEP/SGLang dedup), in activation precision. An ALLTOALL op's `bytes` is the
  NCCL all-to-all buffer per rank, of which (n−1)/n leaves the rank, so for MoE it is the rank's
  remote send volume × n/(n−1).
"""
from __future__ import annotations

from models.moe_routing import EpLoad, uniform_remote_copies_per_token
from models.opgraph_hybrid import state_dense_ops, state_step_ops
from models.ops import (ACTIVATION, ALLREDUCE, ALLTOALL, ATTN_DECODE, ATTN_PREFILL, ATTN_SHARED, EMBEDDING, GEMM,
                        MOE_ROUTER, NORM, P2P, ROPE, SAMPLING, Op, op_of)
from models.spec import (ModelSpec, activation_bytes, dense_weight_dtype, dtype_bytes, kv_cache_dtype,
                         kv_heads_per_gpu, validate_parallelism, vocab_weight_dtype)
from models.step import Parallelism, StepShape

# Nominal element-wise FLOPs per element.
NORM_FLOPS_PER_ELEMENT = 4.0        # square, accumulate, scale by rsqrt, multiply by weight
SWIGLU_FLOPS_PER_ELEMENT = 5.0      # sigmoid (exp, add, divide), two multiplies
ROPE_FLOPS_PER_ELEMENT = 3.0        # x·cos + rotate(x)·sin
SOFTMAX_FLOPS_PER_ELEMENT = 5.0     # max, subtract, exp, sum, divide


def expected_experts_touched(num_experts: int, experts_per_token: int, num_tokens: int) -> float:
    """Expected number of distinct routed experts hit by `num_tokens` tokens choosing top-k each.

    Approximation: routing is uniform and independent across tokens (each token picks a uniformly random
    set of k distinct experts). One expert is missed by a token with probability 1 − k/E, hence by all
    tokens with (1 − k/E)^T, so E[touched] = E·(1 − (1 − k/E)^T), exact under that assumption (checked
    against Monte Carlo in tests). Real routers are skewed, which touches fewer experts for small T:
    this over-estimates weight traffic at small batches, never under-estimates it.
    """
    if num_tokens <= 0:
        return 0.0
    e, k = float(num_experts), float(experts_per_token)
    return e * (1.0 - (1.0 - k / e) ** num_tokens)


def _gemm(name: str, m: float, n: float, k: float, count: int, w_bytes: float, a_bytes: float,
          groups: float = 1.0, bias: bool = False, **extra: float) -> Op:
    """One GEMM (or a grouped GEMM of `groups` equal problems, e.g. the experts of an MoE layer)."""
    flops = 2.0 * groups * m * n * k
    moved = a_bytes * groups * m * (k + n) + w_bytes * groups * k * n + (a_bytes * groups * n if bias else 0.0)
    if groups == 1.0:
        return Op.make(GEMM, name, flops, moved, count, m=m, n=n, k=k, **extra)
    return Op.make(GEMM, name, flops, moved, count, m=m, n=n, k=k, groups=groups, **extra)


gemm_op = _gemm   # the public name, for op graphs built beside this one (models.eagle3, models.mtp)


def _norm(name: str, tokens: float, width: float, count: int, a_bytes: float) -> Op:
    """RMSNorm fused with the residual add (vLLM's fused_add_rms_norm): reads input and residual,
    writes output and residual."""
    return Op.make(NORM, name, NORM_FLOPS_PER_ELEMENT * tokens * width,
                   a_bytes * (4.0 * tokens * width + width), count, tokens=tokens, hidden=width)


def _swiglu(name: str, tokens: float, width: float, count: int, a_bytes: float, **extra: float) -> Op:
    return Op.make(ACTIVATION, name, SWIGLU_FLOPS_PER_ELEMENT * tokens * width,
                   3.0 * a_bytes * tokens * width, count, tokens=tokens, width=width, **extra)


# The routed experts of an MoE layer run as one fused kernel in serving engines (gate/up GEMM, activation
# and down GEMM over the token-expert rows): the three ops carry the layer's identity so that a latency
# source with measured fused-MoE kernels can price the layer as a whole (`moe_part` 0, 1, 2 = gate_up,
# act, down; see profiles.measured). Other sources price the three ops one by one.
def _moe_dims(spec: ModelSpec, rows: float, tp: int, ep: int) -> dict[str, float]:
    """rows: token-expert rows this GPU computes (the straggler's under a routing load)."""
    return {"moe_rows": rows, "moe_experts": spec.num_experts, "moe_top_k": spec.experts_per_token,
            "moe_hidden": spec.hidden_size, "moe_inter": spec.moe_intermediate_size, "moe_tp": tp, "moe_ep": ep}


def _check_counts(num_tokens: int, logits_tokens: int) -> None:
    if not isinstance(num_tokens, int) or num_tokens < 0:
        raise ValueError(f"num_tokens must be an integer >= 0, got {num_tokens!r}")
    if not isinstance(logits_tokens, int) or not 0 <= logits_tokens <= num_tokens:
        raise ValueError(f"logits_tokens must be an integer in 0..num_tokens={num_tokens}, got {logits_tokens!r}")


def _attention_projection_ops(spec: ModelSpec, t: int, tp: int, w: float, a: float) -> list[Op]:
    """QKV projections, q/k norms, RoPE and the output projection of the softmax-attention layers (count =
    those layers; a gated-attention model's q_proj also emits the sigmoid gate applied to the output)."""
    layers = spec.num_attention_layers
    if not layers:
        return []
    heads = spec.num_heads // tp
    h = spec.hidden_size
    if spec.is_mla:
        ops: list[Op] = []
        latent = spec.kv_lora_rank + spec.qk_rope_head_dim
        if spec.q_lora_rank:
            ops.append(_gemm("q_kv_a_proj", t, spec.q_lora_rank + latent, h, layers, w, a))
            ops.append(_norm("q_a_norm", t, spec.q_lora_rank, layers, a))
            ops.append(_gemm("q_b_proj", t, heads * spec.qk_head_dim, spec.q_lora_rank, layers, w, a))
        else:
            ops.append(_gemm("q_proj", t, heads * spec.qk_head_dim, h, layers, w, a))
            ops.append(_gemm("kv_a_proj", t, latent, h, layers, w, a))
        ops.append(_norm("kv_a_norm", t, spec.kv_lora_rank, layers, a))
        # Up-projection of the new tokens' latent into per-head k_nope and v. (Decode kernels absorb
        # this matrix into q and o instead; the FLOPs per new token are the same.)
        ops.append(_gemm("kv_b_proj", t, heads * (spec.qk_nope_head_dim + spec.v_head_dim),
                         spec.kv_lora_rank, layers, w, a))
        rope_heads, rope_dim = heads + 1, spec.qk_rope_head_dim
        o_in = heads * spec.v_head_dim
    else:
        kv = kv_heads_per_gpu(spec, tp)
        gate = heads if spec.attn_output_gate else 0
        ops = [_gemm("qkv_proj", t, (heads + gate + 2 * kv) * spec.head_dim, h, layers, w, a, bias=spec.qkv_bias)]
        if gate:
            gated = t * heads * spec.head_dim
            ops.append(Op.make(ACTIVATION, "attn_output_gate", SWIGLU_FLOPS_PER_ELEMENT * gated, 3.0 * a * gated,
                               layers, tokens=t, width=heads * spec.head_dim))
        if spec.qk_norm:
            ops.append(Op.make(NORM, "qk_norm", NORM_FLOPS_PER_ELEMENT * t * (heads + kv) * spec.head_dim,
                               a * 2.0 * t * (heads + kv) * spec.head_dim, layers,
                               tokens=t * (heads + kv), hidden=spec.head_dim))
        rope_heads, rope_dim = heads + kv, spec.head_dim
        o_in = heads * spec.head_dim
    rope_elements = t * rope_heads * rope_dim
    ops.append(Op.make(ROPE, "rope", ROPE_FLOPS_PER_ELEMENT * rope_elements, a * 2.0 * rope_elements,
                       layers, tokens=t, heads=rope_heads, head_dim=rope_dim))
    ops.append(_gemm("o_proj", t, h, o_in, layers, w, a))
    return ops


def _mlp_ops(spec: ModelSpec, t: float, tp: int, w: float, a: float, par: Parallelism,
             step_tokens: int, w_expert: float) -> list[Op]:
    """Dense MLP layers and MoE layers (router, routed experts, shared experts). `t` is the tokens of this
    GPU's attention group, `step_tokens` the whole step's (they differ only with ep > 1); `w_expert` the bytes
    per routed-expert weight (`w` unless the dtype quantizes only the experts, models.dtypes)."""
    h = spec.hidden_size
    ops: list[Op] = []
    inputs = spec.mlp_matrices - 1   # gate and up (SwiGLU) or up alone (relu²), one GEMM
    if spec.num_dense_layers:
        width, count = spec.intermediate_size / tp, spec.num_dense_layers
        ops += [_gemm("gate_up_proj", t, inputs * width, h, count, w, a),
                _swiglu("act", t, width, count, a),
                _gemm("down_proj", t, h, width, count, w, a)]
    if spec.num_moe_layers:
        count, e, k = spec.num_moe_layers, spec.num_experts, spec.experts_per_token
        # Router GEMM (replicated on every TP rank) plus top-k and the permutation of hidden states to
        # their experts and back (two extra passes over T·k rows), folded into this op's bytes.
        ops.append(Op.make(MOE_ROUTER, "moe_router", 2.0 * t * h * e,
                           a * (h * e + t * h + 2.0 * t * k * h) + 4.0 * t * e, count,
                           tokens=t, experts=e, top_k=k, hidden=h))
        if par.ep > 1:
            ops += _uniform_ep_ops(spec, step_tokens, par, w_expert, a)
        else:
            touched = expected_experts_touched(e, k, t)
            rows = t * k / touched            # mean rows per touched expert
            width = spec.moe_intermediate_size / tp
            fused = _moe_dims(spec, t * k, tp, 1)
            ops += [_gemm("moe_gate_up", rows, inputs * width, h, count, w_expert, a, groups=touched, moe_part=0,
                          **fused),
                    _swiglu("moe_act", t * k, width, count, a, moe_part=1, **fused),
                    _gemm("moe_down", rows, h, width, count, w_expert, a, groups=touched, moe_part=2, **fused)]
        if spec.num_shared_experts:
            shared = spec.num_shared_experts * spec.shared_expert_width / tp
            ops += [_gemm("shared_gate_up", t, inputs * shared, h, count, w, a),
                    _swiglu("shared_act", t, shared, count, a),
                    _gemm("shared_down", t, h, shared, count, w, a)]
            if spec.shared_expert_gate:
                ops.append(_gemm("shared_expert_gate", t, 1, h, count, w, a))
    return ops


def validate_expert_parallelism(spec: ModelSpec, par: Parallelism) -> None:
    """ValueError naming the field when `par.ep` cannot split `spec`'s experts evenly."""
    if par.ep == 1:
        return
    if not spec.is_moe:
        raise ValueError(f"parallelism.ep={par.ep} needs an MoE model; {spec.name} has no experts")
    if spec.num_experts % par.ep:
        raise ValueError(f"parallelism.ep={par.ep} must divide num_experts={spec.num_experts} of {spec.name}")


def moe_ep_ops(spec: ModelSpec, par: Parallelism, rows: float, experts_touched: float, sent_tokens: float,
               dtype: str = "bf16") -> list[Op]:
    """Routed-expert GEMMs and the dispatch/combine all-to-alls of every MoE layer on one EP rank that
    processes `rows` (token, expert) rows over `experts_touched` local experts and sends (and receives)
    `sent_tokens` tokens to (from) other ranks per dispatch. Experts are whole on their rank."""
    validate_expert_parallelism(spec, par)
    if par.ep == 1:
        raise ValueError("moe_ep_ops needs parallelism.ep > 1")
    if rows < 0 or sent_tokens < 0 or experts_touched < 0 or (rows > 0) != (experts_touched > 0):
        raise ValueError(f"moe_ep_ops: rows, experts_touched, sent_tokens must be >= 0 and rows > 0 exactly "
                         f"when experts are touched (got {rows}, {experts_touched}, {sent_tokens})")
    return _ep_ops(spec, par.ep, rows, experts_touched, sent_tokens, dtype_bytes(dtype), activation_bytes(dtype))


def _ep_ops(spec: ModelSpec, n: int, rows: float, experts_touched: float, sent_tokens: float,
            w: float, a: float) -> list[Op]:
    count, h, width = spec.num_moe_layers, spec.hidden_size, spec.moe_intermediate_size
    ops: list[Op] = []
    if rows > 0:
        fused = _moe_dims(spec, rows, 1, n)
        inputs = spec.mlp_matrices - 1
        ops += [_gemm("moe_gate_up", rows / experts_touched, inputs * width, h, count, w, a, groups=experts_touched,
                      moe_part=0, **fused),
                _swiglu("moe_act", rows, width, count, a, moe_part=1, **fused),
                _gemm("moe_down", rows / experts_touched, h, width, count, w, a, groups=experts_touched,
                      moe_part=2, **fused)]
    if sent_tokens > 0:
        buffer = sent_tokens * h * a * n / (n - 1)
        ops += [Op.make(ALLTOALL, name, 0.0, buffer, count, bytes=buffer, ranks=n)
                for name in ("moe_dispatch", "moe_combine")]
    return ops


def moe_ep_ops_from_load(spec: ModelSpec, par: Parallelism, load: EpLoad, dtype: str = "bf16") -> list[Op]:
    """`moe_ep_ops` for the straggler of a given EP load (e.g. `models.moe_routing.sample_ep_load` with a
    skewed routing): the most loaded rank's rows and touched experts, and the largest per-rank send or
    receive token count (the all-to-all ends when its busiest rank does)."""
    if load.num_ranks != par.ep:
        raise ValueError(f"load has {load.num_ranks} ranks but parallelism.ep={par.ep}")
    s = load.straggler_rank
    traffic = max(load.send_bytes_per_rank(1.0).max(), load.recv_bytes_per_rank(1.0).max())
    return moe_ep_ops(spec, par, float(load.rows_per_rank[s]), float(load.experts_touched_per_rank[s]),
                      float(traffic), dtype)


def _uniform_ep_ops(spec: ModelSpec, step_tokens: int, par: Parallelism, w: float, a: float) -> list[Op]:
    """moe_ep_ops at the expected load of uniform routing over an even contiguous placement."""
    e, k, n = spec.num_experts, spec.experts_per_token, par.ep
    touched = expected_experts_touched(e, k, step_tokens) / n
    sent = step_tokens / n * uniform_remote_copies_per_token(e, k, n, dedup=True)
    return _ep_ops(spec, n, step_tokens * k / n, touched, sent, w, a)


def logits_ops(spec: ModelSpec, logits_tokens: int, par: Parallelism, dtype: str = "bf16") -> list[Op]:
    """The LM head and the sampling of `logits_tokens` rows (part of `dense_ops`; none for none). With one
    tensor- and one pipeline-parallel rank they are the last ops of `dense_ops`, after every op that depends
    on the step's tokens only (simulator.cost.step_cost.ForwardCost.dense prices them apart so)."""
    if not logits_tokens:
        return []
    w, a = dtype_bytes(dense_weight_dtype(dtype)), activation_bytes(dtype)
    lt = logits_tokens if par.attention_dp == 1 else logits_tokens / par.attention_dp
    tp, h, v = par.tp, spec.hidden_size, spec.vocab_size
    vocab_dtype = vocab_weight_dtype(dtype)
    if vocab_dtype == dense_weight_dtype(dtype):
        head = _gemm("lm_head", lt, v / tp, h, 1, w, a)
    else:   # a quantized model's LM head is 16-bit (module docstring)
        head = _gemm("lm_head", lt, v / tp, h, 1, dtype_bytes(vocab_dtype), a, vocab_16bit=1.0)
    return [head, Op.make(SAMPLING, "sampling", SOFTMAX_FLOPS_PER_ELEMENT * lt * v, lt * v * (a + 8.0), 1,
                          tokens=lt, vocab=v)]


def dense_ops(spec: ModelSpec, num_tokens: int, logits_tokens: int, par: Parallelism,
              dtype: str = "bf16") -> list[Op]:
    """All non-attention ops of one forward pass over `num_tokens` tokens, with LM-head logits for
    `logits_tokens` of them. Empty step ⇒ []."""
    _check_counts(num_tokens, logits_tokens)
    validate_parallelism(spec, par)
    validate_expert_parallelism(spec, par)
    w, a = dtype_bytes(dense_weight_dtype(dtype)), activation_bytes(dtype)
    if num_tokens == 0:
        return []
    dp = par.attention_dp
    # DP attention (ep > 1): this GPU's group holds an even share of the step's tokens (module docstring).
    t = num_tokens if dp == 1 else num_tokens / dp
    lt = logits_tokens if dp == 1 else logits_tokens / dp
    tp, h, v = par.tp, spec.hidden_size, spec.vocab_size
    ops = [Op.make(EMBEDDING, "embedding", 0.0, t * h * (dtype_bytes(vocab_weight_dtype(dtype)) + a), 1, tokens=t,
                   hidden=h),
           _norm("norm", t, h, spec.num_sublayers + 1, a)]
    ops += _attention_projection_ops(spec, t, tp, w, a)
    if spec.num_state_layers:
        ops += state_dense_ops(spec, t, par, w, a)
    ops += _mlp_ops(spec, t, tp, w, a, par, num_tokens, dtype_bytes(dtype))
    ops += logits_ops(spec, logits_tokens, par, dtype)
    if tp > 1:
        hidden_bytes = t * h * a
        ops.append(Op.make(ALLREDUCE, "tp_allreduce", 0.0, hidden_bytes, spec.num_sublayers,
                           bytes=hidden_bytes, ranks=tp))
        ops.append(Op.make(ALLREDUCE, "embedding_allreduce", 0.0, hidden_bytes, 1, bytes=hidden_bytes, ranks=tp))
        if logits_tokens:
            # Vocab-parallel logits are gathered onto every rank: an all-gather whose per-GPU traffic,
            # (n−1)/n of the gathered logits, is the all-to-all volume, so it is priced as ALLTOALL.
            logit_bytes = lt * v * a
            ops.append(Op.make(ALLTOALL, "logits_allgather", 0.0, logit_bytes, 1, bytes=logit_bytes, ranks=tp))
    if par.pp > 1:
        send_bytes = t * h * a
        ops.append(Op.make(P2P, "pp_send", 0.0, send_bytes, par.pp - 1, bytes=send_bytes, span=par.gpus))
    return ops


class _AttentionConstants:
    """Per-(spec, tp, dtype, KV dtype) numbers that make `attention_ops` a handful of multiplications."""

    __slots__ = ("spec", "layers", "heads", "prefill_flops_per_pair", "prefill_kv_bytes_per_key",
                 "prefill_qo_bytes_per_token", "prefill_dims", "decode_flops_per_pair",
                 "decode_kv_bytes_per_key", "decode_qo_bytes_per_token", "decode_dims")

    def __init__(self, spec: ModelSpec, tp: int, dtype: str, kv_dtype: str | None = None):
        kv_b, a = dtype_bytes(kv_cache_dtype(dtype, kv_dtype)), activation_bytes(dtype)
        heads = spec.num_heads // tp
        self.spec, self.layers, self.heads = spec, spec.num_attention_layers, heads
        qk, vd = spec.qk_head_dim, spec.attn_v_head_dim
        # Per (query, key) pair: q·k over qk dims and p·v over v dims, 2 FLOPs per multiply-add, per head.
        self.prefill_flops_per_pair = 2.0 * heads * (qk + vd)
        self.prefill_qo_bytes_per_token = a * heads * (qk + vd)
        if spec.is_mla:
            # Prefill in the up-projected form: keys/values are per-head activations (k: qk, v: vd).
            # Approximation: the up-projection of a chunk's cached prefix (what vLLM does for chunked
            # prefill) is not counted; it adds 2·kv_lora·heads·(nope+v) FLOPs per cached token, i.e.
            # ≈ 410/c of a c-token chunk's attention FLOPs for DeepSeek-V3.
            self.prefill_kv_bytes_per_key = a * heads * (qk + vd)
            self.prefill_dims = (("head_dim", float(qk)), ("heads", float(heads)), ("kv_heads", float(heads)))
            # Decode in the weight-absorbed form (FlashMLA): every head attends over the shared latent
            # (kv_lora + rope for scores, kv_lora for values); the latent cache is replicated per TP rank.
            latent = spec.kv_lora_rank + spec.qk_rope_head_dim
            self.decode_flops_per_pair = 2.0 * heads * (latent + spec.kv_lora_rank)
            self.decode_kv_bytes_per_key = kv_b * latent
            self.decode_qo_bytes_per_token = a * heads * (latent + spec.kv_lora_rank)
            self.decode_dims = (("head_dim", float(latent)), ("heads", float(heads)), ("kv_heads", 1.0))
        else:
            kv = kv_heads_per_gpu(spec, tp)
            self.prefill_kv_bytes_per_key = kv_b * 2.0 * kv * spec.head_dim
            self.prefill_dims = (("head_dim", float(spec.head_dim)), ("heads", float(heads)),
                                 ("kv_heads", float(kv)))
            self.decode_flops_per_pair = self.prefill_flops_per_pair
            self.decode_kv_bytes_per_key = self.prefill_kv_bytes_per_key
            self.decode_qo_bytes_per_token = self.prefill_qo_bytes_per_token
            self.decode_dims = self.prefill_dims


_CONSTANTS: dict[tuple[int, int, str, str | None], _AttentionConstants] = {}


def _constants(spec: ModelSpec, par: Parallelism, dtype: str, kv_dtype: str | None = None) -> _AttentionConstants:
    key = (id(spec), par.tp, dtype, kv_dtype)
    found = _CONSTANTS.get(key)
    if found is None or found.spec is not spec:
        validate_parallelism(spec, par)
        found = _CONSTANTS[key] = _AttentionConstants(spec, par.tp, dtype, kv_dtype)
    return found


def window_pairs(offset: float, chunk: float, window: float) -> float:
    """(query, key) pairs of `chunk` query tokens after `offset` earlier ones when each query sees at most
    `window` keys (itself included): Σ_{p=offset+1}^{offset+chunk} min(p, window)."""
    if offset + chunk <= window:
        return chunk * offset + chunk * (chunk + 1.0) * 0.5
    if offset >= window:
        return chunk * window
    inside = window - offset
    return inside * offset + inside * (inside + 1.0) * 0.5 + (chunk - inside) * window


def _prefill_op(c: _AttentionConstants, t: float, seqs: float, pairs: float, count: int, name: str,
                window: tuple[float, float] | None = None) -> Op:
    """`window`: (sliding window, mean cached prefix per sequence) of a sliding-window layer's op; its pairs
    are the window's, so a pricer that looks up a measured prompt needs the prefix as a dim of its own."""
    mean_chunk = t / seqs
    keys = pairs / mean_chunk + seqs * (mean_chunk - 1.0) * 0.5
    dims = (("attn_pairs", float(pairs)),) + c.prefill_dims + (("q_tokens", float(t)), ("seqs", float(seqs)))
    if window is not None:   # (dims stay sorted by name)
        dims = tuple(sorted(dims + (("prefix_per_seq", float(window[1])), ("window", float(window[0])))))
    return op_of(ATTN_PREFILL, name, c.prefill_flops_per_pair * pairs,
                 t * c.prefill_qo_bytes_per_token + keys * c.prefill_kv_bytes_per_key, count, dims)


def _decode_op(c: _AttentionConstants, seqs: float, q: int, ctx: float, tree: bool, count: int, name: str,
               pairs: float | None = None) -> Op:
    if pairs is None:
        pairs = q * ctx + seqs * (q * q if tree else q * (q + 1) * 0.5)
    queries = seqs * q
    dims = (("ctx_per_seq", ctx / seqs),) + c.decode_dims + (
        ("q_per_seq", float(q)), ("seqs", float(seqs)), ("tree", 1.0 if tree else 0.0))
    return op_of(ATTN_DECODE, name, c.decode_flops_per_pair * pairs,
                 queries * c.decode_qo_bytes_per_token + (ctx + queries) * c.decode_kv_bytes_per_key, count, dims)


def attention_ops(spec: ModelSpec, shape: StepShape, par: Parallelism, dtype: str = "bf16",
                  kv_dtype: str | None = None) -> list[Op]:
    """ATTN_PREFILL for the step's prefill chunks and ATTN_DECODE for its decode/verify queries (plus
    ATTN_SHARED for shared-prefix attention); the KV cache is read in `kv_dtype` (default
    `models.spec.kv_cache_dtype(dtype)`).

    Prefill K/V traffic: a chunk of c tokens after o cached ones reads o + c keys; with only the sums
    available, Σ(o + c) is taken as pairs/c̄ + seqs·(c̄ − 1)/2 with c̄ = tokens/seqs, exact when all chunks
    have the same length. Decode: every query token of a request attends to its request's cached
    context and, causally, to the request's earlier new tokens (q(q+1)/2 pairs); a tree mask is priced as
    the full q×q block the kernel computes. K/V of context and new tokens are read once per layer.
    With ep > 1 each attention group takes an even share of the chunks and decode requests (see the
    module docstring).

    Sliding-window layers (`spec.sliding_window_layers`) are separate ops whose queries see at most
    `sliding_window` keys. Approximation: their pairs and keys are those of the mean request (mean chunk
    and prefix for prefill, mean context for decode), exact when all requests are alike.

    A hybrid model's state layers (linear attention, Mamba) add their conv1d and recurrent kernels for the
    step's chunks and decode requests (models.opgraph_hybrid.state_step_ops).

    Shared-prefix attention (`shape.shared_context_tokens` > 0, full-attention layers): the decode op
    covers only each request's unshared context, and one ATTN_SHARED op per layer computes every sharer's
    queries against the shared blocks, reading them once for the whole step (Hydragen, Juravsky et al.
    2024; BatchLLM, Zheng et al. 2024): same FLOPs, KV bytes of the distinct shared tokens only.
    Approximation: the merge of the two partial softmaxes (a few element-wise ops per query) is not priced.
    """
    c = _constants(spec, par, dtype, kv_dtype)
    validate_expert_parallelism(spec, par)
    ops: list[Op] = []
    if shape.prefill_tokens > 0:
        _prefill_attention(c, spec, par, shape.prefill_tokens, shape.prefill_seqs, shape.prefill_attn_pairs, ops)
    if shape.decode_seqs > 0:
        _decode_attention(c, spec, par, shape.decode_seqs, shape.query_tokens_per_seq, shape.decode_context_tokens,
                          shape.tree_attention, ops, shape.shared_context_tokens, shape.shared_prefix_tokens,
                          shape.shared_prefix_seqs)
    if spec.num_state_layers:
        ops += state_step_ops(spec, shape, par, dtype)
    return ops


def prefill_attention_ops(spec: ModelSpec, tokens: int, seqs: int, attn_pairs: int, par: Parallelism,
                          dtype: str = "bf16", kv_dtype: str | None = None) -> list[Op]:
    """`attention_ops` of a prefill-only pass (`tokens` prompt tokens in `seqs` chunks, `attn_pairs` pairs), the
    same ops, without building its StepShape (a frozen dataclass of eleven fields: most of what building a
    plain model's list cost; the DES builds one list per new prompt length)."""
    if spec.num_state_layers:   # (the state layers' ops read the shape)
        return attention_ops(spec, StepShape(prefill_tokens=tokens, prefill_seqs=seqs, prefill_attn_pairs=attn_pairs),
                             par, dtype, kv_dtype)
    c = _constants(spec, par, dtype, kv_dtype)
    validate_expert_parallelism(spec, par)
    ops: list[Op] = []
    if tokens > 0:
        _prefill_attention(c, spec, par, tokens, seqs, attn_pairs, ops)
    return ops


def decode_attention_ops(spec: ModelSpec, seqs: int, q: int, context_tokens: int, tree: bool, par: Parallelism,
                         dtype: str = "bf16", kv_dtype: str | None = None) -> list[Op]:
    """`attention_ops` of a decode-only pass (`seqs` requests of `q` query tokens each over `context_tokens`
    cached tokens in all, under a tree mask when `tree`; no shared prefix), the same ops, without building its
    StepShape (see `prefill_attention_ops`; the DES builds one list per decode-step grid row it prices)."""
    if spec.num_state_layers:
        return attention_ops(spec, StepShape(decode_seqs=seqs, query_tokens_per_seq=q,
                                             decode_context_tokens=context_tokens, tree_attention=tree),
                             par, dtype, kv_dtype)
    c = _constants(spec, par, dtype, kv_dtype)
    validate_expert_parallelism(spec, par)
    ops: list[Op] = []
    if seqs > 0:
        _decode_attention(c, spec, par, seqs, q, context_tokens, tree, ops)
    return ops


def _prefill_attention(c: _AttentionConstants, spec: ModelSpec, par: Parallelism, t, seqs, pairs,
                       ops: list[Op]) -> None:
    """The ATTN_PREFILL ops of `t` > 0 prompt tokens in `seqs` chunks with `pairs` pairs, appended to `ops`
    (`attention_ops`)."""
    dp = par.attention_dp
    swa, window = spec.sliding_window_layers, float(spec.sliding_window)
    full = c.layers - swa
    if seqs <= 0 or pairs < t:
        raise ValueError(f"step shape: prefill_tokens={t} needs prefill_seqs >= 1 and "
                         f"prefill_attn_pairs >= prefill_tokens (got {seqs}, {pairs})")
    if dp > 1:
        t, seqs, pairs = t / dp, seqs / dp, pairs / dp
    if full:
        ops.append(_prefill_op(c, t, seqs, pairs, full, "attn_prefill"))
    if swa:
        chunk = t / seqs
        prefix = max(0.0, (pairs / seqs - chunk * (chunk + 1.0) * 0.5) / chunk)
        ops.append(_prefill_op(c, t, seqs, seqs * window_pairs(prefix, chunk, window), swa,
                               "attn_prefill_window", (window, prefix)))


def _decode_attention(c: _AttentionConstants, spec: ModelSpec, par: Parallelism, seqs, q, ctx, tree: bool,
                      ops: list[Op], shared=0, unique_prefix=0, sharers=0) -> None:
    """The ATTN_DECODE (and ATTN_SHARED) ops of `seqs` > 0 decode requests, appended to `ops` (`attention_ops`;
    `shared`, `unique_prefix`, `sharers`: the shape's shared_context_tokens, shared_prefix_tokens and
    shared_prefix_seqs)."""
    dp = par.attention_dp
    swa, window = spec.sliding_window_layers, float(spec.sliding_window)
    full = c.layers - swa
    decode_seqs = seqs
    if q < 1 or ctx < 0 or not 0 <= shared <= ctx:
        raise ValueError(f"step shape: query_tokens_per_seq must be >= 1, decode_context_tokens >= 0 and "
                         f"shared_context_tokens in 0..decode_context_tokens (got {q}, {ctx}, {shared})")
    if shared and not 0 < unique_prefix <= shared or shared and not 0 < sharers <= decode_seqs:
        raise ValueError(f"step shape: shared_context_tokens={shared} needs shared_prefix_tokens in 1.."
                         f"{shared} and shared_prefix_seqs in 1..decode_seqs (got {unique_prefix}, {sharers})")
    if dp > 1:
        seqs, ctx, shared = seqs / dp, ctx / dp, shared / dp
        unique_prefix, sharers = unique_prefix / dp, sharers / dp
    if full:
        ops.append(_decode_op(c, seqs, q, ctx - shared, tree, full, "attn_decode"))
        if shared > 0:
            # The sharers' queries against the distinct shared tokens; a shared token is read by
            # shared/unique_prefix requests on average, the queries of one prefix matmul.
            queries = sharers * q
            groups = sharers * unique_prefix / shared
            dims = (("attn_pairs", float(q * shared)),) + c.decode_dims + (
                ("keys", float(unique_prefix)), ("q_tokens", float(queries)), ("seqs", float(groups)))
            ops.append(Op(ATTN_SHARED, "attn_shared_prefix", c.decode_flops_per_pair * q * shared,
                          queries * c.decode_qo_bytes_per_token + unique_prefix * c.decode_kv_bytes_per_key,
                          full, dims))
    if swa:
        mean = ctx / seqs
        pairs = seqs * (q * min(mean, window) + q * q if tree else window_pairs(mean, q, window))
        ops.append(_decode_op(c, seqs, q, seqs * min(mean, window), tree, swa, "attn_decode_window", pairs))


def step_ops(spec: ModelSpec, shape: StepShape, par: Parallelism, dtype: str = "bf16",
             kv_dtype: str | None = None) -> list[Op]:
    """dense_ops(num_tokens, effective_logits_tokens) + attention_ops. Empty step ⇒ []."""
    if shape.num_tokens == 0:
        return []
    return dense_ops(spec, shape.num_tokens, shape.effective_logits_tokens, par, dtype) + \
        attention_ops(spec, shape, par, dtype, kv_dtype)
