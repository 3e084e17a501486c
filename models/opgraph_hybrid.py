"""Op graph of the recurrent token mixers of hybrid models (gated DeltaNet, Mamba-1/2; models.mixers).

`state_dense_ops` lists what depends only on the step's tokens (the layers' projections, gating and gated
norms, a per-layer count like models.opgraph.dense_ops); `state_step_ops` lists the kernels that depend on how
the tokens split into prompt chunks and decoding requests: the causal conv1d and the recurrent core, in the
two forms engines run (vLLM `gdn_linear_attn.py` / `mamba_mixer2.py`: prefill chunks through
`causal_conv1d_fn` and the chunked kernels, decode tokens through `causal_conv1d_update` and the recurrent
update kernels, each its own launch per layer). Per GPU: heads split by tensor parallelism; under DP attention
(ep > 1) each attention group takes an even share of the tokens and requests (models.opgraph).

Bytes (models.mixers for the FLOPs): activations in `a` bytes per element, the temporal state in its own
dtype, chunk states in fp32. A prefill chunk reads and writes its request's state once; a decode request
reads its state once and writes one state per query token (verification keeps every draft position's state
so that a rejection selects one, models.mixers). Approximation: the chunk states of a prefill chunk are
counted as tokens / chunk + 1 per sequence (exact for chunks that are whole multiples of the kernel's chunk).
"""
from __future__ import annotations

from models.mixers import LINEAR_ATTENTION, MAMBA, STATE_ACCUMULATOR_BYTES, MixerShape, mixer_shape
from models.ops import ACTIVATION, ALLREDUCE, CONV1D, GDN_DECODE, GDN_PREFILL, NORM, SSM_DECODE, SSM_PREFILL, Op
from models.spec import ModelSpec, activation_bytes, dense_weight_dtype, dtype_bytes
from models.step import Parallelism, StepShape

GATE_FLOPS_PER_ELEMENT = 5.0   # softplus/sigmoid/exp of a gate (as models.opgraph's SwiGLU)
NORM_FLOPS_PER_ELEMENT = 4.0


def _gemm(name: str, m: float, n: float, k: float, count: int, w: float, a: float) -> Op:
    from models.opgraph import gemm_op
    return gemm_op(name, m, n, k, count, w, a)


def _state_bytes(spec: ModelSpec, a: float) -> float:
    return dtype_bytes(spec.ssm_state_dtype) if spec.ssm_state_dtype else a


def state_dense_ops(spec: ModelSpec, t: float, par: Parallelism, w: float, a: float) -> list[Op]:
    """Projections, gating and gated norms of the state layers for `t` tokens on one GPU."""
    tp, h, ops = par.tp, spec.hidden_size, []
    n = spec.mixer_layers(LINEAR_ATTENTION)
    if n:
        nk, nv, dk, dv = (spec.linear_num_key_heads, spec.linear_num_value_heads, spec.linear_key_head_dim,
                          spec.linear_value_head_dim)
        width = nv * dv / tp
        ops += [_gemm("gdn_in_proj_qkvz", t, (2 * nk * dk + 2 * nv * dv) / tp, h, n, w, a),
                _gemm("gdn_in_proj_ba", t, 2 * nv / tp, h, n, w, a),
                Op.make(ACTIVATION, "gdn_gating", GATE_FLOPS_PER_ELEMENT * 2 * t * nv / tp, a * 4 * t * nv / tp, n,
                        tokens=t, width=2 * nv / tp),
                Op.make(NORM, "gdn_gated_norm", NORM_FLOPS_PER_ELEMENT * 2 * t * width, a * (3 * t * width + dv), n,
                        tokens=t, hidden=width),
                _gemm("gdn_out_proj", t, h, width, n, w, a)]
    n = spec.mixer_layers(MAMBA)
    if n:
        shape = mixer_shape(spec, MAMBA, tp)
        inner = spec.mamba_inner_size / tp
        if spec.mamba_version == 2:
            ops += [_gemm("mamba_in_proj", t, inner + shape.conv_channels + shape.heads, h, n, w, a),
                    Op.make(NORM, "mamba_gated_norm", NORM_FLOPS_PER_ELEMENT * 2 * t * inner,
                            a * (3 * t * inner + inner), n, tokens=t, hidden=inner)]
        else:
            r, state = spec.mamba_dt_rank, spec.ssm_state_size
            ops += [_gemm("mamba_in_proj", t, 2 * inner, h, n, w, a),
                    _gemm("mamba_x_proj", t, r + 2 * state, inner, n, w, a),
                    _gemm("mamba_dt_proj", t, inner, r, n, w, a),
                    Op.make(ACTIVATION, "mamba_gate", GATE_FLOPS_PER_ELEMENT * t * inner, a * 3 * t * inner, n,
                            tokens=t, width=inner)]
            if tp > 1:   # x_proj is row-parallel (vLLM MambaMixer): its small output is all-reduced
                moved = t * (r + 2 * state) * a
                ops.append(Op.make(ALLREDUCE, "mamba_x_proj_allreduce", 0.0, moved, n, bytes=moved, ranks=tp))
        ops.append(_gemm("mamba_out_proj", t, h, inner, n, w, a))
    return ops


def _gdn_layout(spec: ModelSpec, kind: str, tp: int) -> dict[str, float]:
    """A gated-DeltaNet layer's per-GPU head layout (for measured kernel tables keyed by it); {} for Mamba."""
    if kind != LINEAR_ATTENTION:
        return {}
    return {"key_heads": spec.linear_num_key_heads / tp, "heads": spec.linear_num_value_heads / tp,
            "key_dim": float(spec.linear_key_head_dim), "value_dim": float(spec.linear_value_head_dim)}


def _conv(name: str, shape: MixerShape, tokens: float, seqs: float, decode: bool, count: int, w: float,
          a: float, layout: dict[str, float]) -> Op:
    ch = shape.conv_channels
    moved = a * 2.0 * tokens * ch + a * 2.0 * seqs * shape.conv_state_elements() + w * ch * shape.conv_kernel
    return Op.make(CONV1D, name, tokens * shape.conv_flops_per_token(), moved, count, decode=1.0 if decode else 0.0,
                   tokens=tokens, seqs=seqs, channels=ch, kernel=float(shape.conv_kernel), **layout)


def _core_prefill(spec: ModelSpec, kind: str, shape: MixerShape, t: float, seqs: float, count: int, a: float,
                  key_heads: float) -> Op:
    sb = _state_bytes(spec, a)
    chunks = t / shape.chunk + seqs if shape.chunk > 1 else 0.0
    moved = (a * t * shape.core_io_elements_per_token() + 2.0 * seqs * shape.state_elements * sb
             + 2.0 * chunks * shape.state_elements * STATE_ACCUMULATOR_BYTES)
    flops = t * shape.prefill_flops_per_token()
    if kind == LINEAR_ATTENTION:
        return Op.make(GDN_PREFILL, "gdn_chunk_prefill", flops, moved, count, tokens=t, seqs=seqs, heads=shape.heads,
                       key_heads=key_heads, key_dim=shape.key_dim, value_dim=shape.value_dim, chunk=shape.chunk)
    return Op.make(SSM_PREFILL, "mamba_scan_prefill", flops, moved, count, version=float(shape.version), tokens=t,
                   seqs=seqs, heads=shape.heads, state=shape.key_dim, head_dim=shape.value_dim, chunk=shape.chunk)


def _core_decode(spec: ModelSpec, kind: str, shape: MixerShape, seqs: float, q: int, count: int, a: float,
                 key_heads: float) -> Op:
    sb = _state_bytes(spec, a)
    tokens = seqs * q
    moved = a * tokens * shape.core_io_elements_per_token() + seqs * (1.0 + q) * shape.state_elements * sb
    flops = tokens * shape.decode_flops_per_token()
    if kind == LINEAR_ATTENTION:
        return Op.make(GDN_DECODE, "gdn_recurrent_decode", flops, moved, count, seqs=seqs, q_per_seq=float(q),
                       heads=shape.heads, key_heads=key_heads, key_dim=shape.key_dim, value_dim=shape.value_dim)
    return Op.make(SSM_DECODE, "mamba_state_update", flops, moved, count, version=float(shape.version), seqs=seqs,
                   q_per_seq=float(q), heads=shape.heads, state=shape.key_dim, head_dim=shape.value_dim)


def state_step_ops(spec: ModelSpec, shape: StepShape, par: Parallelism, dtype: str = "bf16") -> list[Op]:
    """Conv1d and recurrent-core kernels of the state layers for one step's prompt chunks and decode requests."""
    if not spec.num_state_layers:
        return []
    w, a = dtype_bytes(dense_weight_dtype(dtype)), activation_bytes(dtype)
    dp = par.attention_dp
    ops: list[Op] = []
    for kind, prefix in ((LINEAR_ATTENTION, "gdn"), (MAMBA, "mamba")):
        count = spec.mixer_layers(kind)
        if not count:
            continue
        mix, layout = mixer_shape(spec, kind, par.tp), _gdn_layout(spec, kind, par.tp)
        key_heads = layout.get("key_heads", 0.0)
        if shape.prefill_tokens > 0:
            t, seqs = shape.prefill_tokens / dp, shape.prefill_seqs / dp
            ops += [_conv(f"{prefix}_conv1d_prefill", mix, t, seqs, False, count, w, a, layout),
                    _core_prefill(spec, kind, mix, t, seqs, count, a, key_heads)]
        if shape.decode_seqs > 0:
            seqs, q = shape.decode_seqs / dp, shape.query_tokens_per_seq
            ops += [_conv(f"{prefix}_conv1d_decode", mix, seqs * q, seqs, True, count, w, a, layout),
                    _core_decode(spec, kind, mix, seqs, q, count, a, key_heads)]
    return ops
