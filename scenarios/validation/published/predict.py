"""Predicting a published measurement with the defaults a user gets (`PREDICTORS[kind](point)`).

Every prediction uses draftsim's default latency block for the point's serving framework (measured
kernel tables where the package covers the GPU, the roofline elsewhere; the framework's engine-time
model) — nothing here is tuned to the points. What each kind runs:

* `gemm`, `attention`: the latency model's price of that one kernel (`op_seconds`).
* `decode_step`, `prefill_step`: `simulator.estimate_step` (the simulator's step cost).
* serving kinds: a DES run of the published workload (`serving_scenario`): `offline` and `batch` send
  every request at t = 0 (a closed loop with as many clients as requests), `concurrency` is a closed
  loop, `poisson` is Poisson arrivals; the engine's scheduler defaults (`scheduler_defaults`).
* `spec_speedup`, `spec_tpot`: two DES runs (with and without the drafter) of the same requests; the
  acceptance is the registry row the point names (`acceptance_entry`, profiles/data/acceptance_published:
  another engine's or paper's measurement of the same pair, converted to per-position rates by the
  registry's stated rule; `acceptance_first_alpha_entry`: α₁ from a second row, decayed to the first's
  length). SGLang tree points (`tree_nodes`, `eagle_topk`) run SGLang's EAGLE tree with the row's accepted
  path (simulator.speculation.published_tree). Points whose acceptance comes from the timed run itself are
  reported apart (their acceptance is an outcome of the run being predicted).

A ShareGPT point without published lengths draws them as its benchmark client does (`_length_fields`:
vLLM's client for vLLM's runs, simulator.core.bench_clients). A point that cannot be predicted (model or GPU
outside the catalog, a dataset whose lengths are neither published nor drawn by a known client, a tree whose
top-k is not given) raises `Unpredictable` with the reason; a serving run in which
draftsim dropped requests that the publication served (e.g. a prompt beyond the modelled KV capacity) raises
`DroppedRequests` (a failed prediction).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scenarios.validation.published.points import DTYPES, Point, catalog_model, framework

# Context assumed when a decode-step point does not state it (batch-1 tokens/s on chat prompts): the
# attention over 256 cached tokens is < 3 % of a batch-1 step of the models in the registry.
DEFAULT_DECODE_CONTEXT = 256
# Requests simulated for a closed-loop point that does not state its request count; the statistics use
# the steady state in between the first and last `concurrency` requests (`measured_requests`).
CLOSED_LOOP_REQUESTS_PER_CLIENT = 16
MIN_CLOSED_LOOP_REQUESTS = 64


class Unpredictable(Exception):
    """The point's setup cannot be expressed in draftsim; the message says why."""


@dataclass(frozen=True)
class Prediction:
    value: float      # same unit as the point's value converted to SI (seconds, tokens/s, req/s, ×)
    pricing: str      # which latency source priced it (measured / roofline / profile)
    note: str = ""


def _hardware(point: Point) -> str:
    from profiles.hardware import HARDWARE
    if point.hardware not in HARDWARE:
        raise Unpredictable(f"hardware {point.hardware!r} is not in the catalog")
    return point.hardware


def _dtype(point: Point) -> str:
    if point.dtype not in DTYPES:
        raise Unpredictable(f"dtype {point.dtype!r} is not modelled")
    return DTYPES[point.dtype]


def _model(point: Point) -> str:
    name = catalog_model(point)
    if name is None:
        raise Unpredictable(f"model {point.model!r} is not in the catalog")
    return name


def _latency_block(point: Point, override: dict | None = None) -> dict:
    """The point's serving framework, and its release when published (the engine-time model of that
    release; kernels from the package's tables of the framework), updated with `override` (a
    `cluster.latency` block, e.g. {"source": "roofline", "engine_time": False} for a comparison)."""
    fw = framework(point)
    block = {} if fw is None else {
        "framework": fw, **({"engine_version": point.framework_version} if point.framework_version else {})}
    return {**block, **(override or {})}


def _engine_block(point: Point) -> dict | None:
    """The `cluster.engine` flags the publication states (None: the release's defaults)."""
    return dict(point.engine_flags) if point.engine_flags else None


def _kernel_latency(hw: str, dtype: str, override: dict | None):
    from profiles.select import LatencySourceConfig, select_latency
    return select_latency(hw, dtype, LatencySourceConfig(source=(override or {}).get("source", "auto")))


def _pricing(model) -> str:
    return model.describe()["source"]


# ---- kernels ---------------------------------------------------------------------------------------
def predict_gemm(point: Point, latency: dict | None = None) -> Prediction:
    from models.ops import GEMM, Op
    from models.spec import activation_bytes, dtype_bytes
    hw, dtype = _hardware(point), _dtype(point)
    m, n, k = (float(point.w(x)) for x in ("m", "n", "k"))
    w, a = dtype_bytes(dtype), activation_bytes(dtype)
    op = Op.make(GEMM, "gemm", 2.0 * m * n * k, a * m * (k + n) + w * k * n, 1, m=m, n=n, k=k)
    model = _kernel_latency(hw, dtype, latency)
    return Prediction(model.op_seconds(op), _pricing(model))


def predict_attention(point: Point, latency: dict | None = None) -> Prediction:
    from models.opgraph import attention_ops
    from models.spec import ModelSpec
    from models.step import Parallelism, StepShape
    hw, dtype = _hardware(point), _dtype(point)
    b, h, kv, d = (int(point.w(x)) for x in ("batch", "num_heads", "num_kv_heads", "head_dim"))
    probe = ModelSpec(name="attention", family="probe", hidden_size=h * d, num_layers=1, num_heads=h,
                      num_kv_heads=kv, head_dim=d, intermediate_size=1, vocab_size=1)
    if point.w("phase") == "prefill":
        s = int(point.w("seq_len"))
        pairs = b * s * s if point.w("causal") is False else b * s * (s + 1) // 2
        shape = StepShape(prefill_tokens=b * s, prefill_seqs=b, prefill_attn_pairs=pairs)
    else:
        shape = StepShape(decode_seqs=b, decode_context_tokens=b * int(point.w("context_tokens", point.w("seq_len"))))
    model = _kernel_latency(hw, dtype, latency)
    ops = attention_ops(probe, shape, Parallelism(1, 1), dtype)
    return Prediction(sum(model.op_seconds(op) for op in ops), _pricing(model),
                      "non-causal attention priced as twice the causal pairs" if point.w("causal") is False else "")


# ---- single steps ----------------------------------------------------------------------------------
def predict_step(point: Point, latency: dict | None = None) -> Prediction:
    import simulator
    hw, dtype, model = _hardware(point), _dtype(point), _model(point)
    batch = int(point.w("batch", 1))
    note = ""
    if point.kind == "prefill_step":
        result = simulator.estimate_step(model, hw, tp=point.tp, dtype=dtype, batch=batch,
                                         context_tokens=int(point.w("context_tokens", 0)),
                                         prefill_tokens=int(point.w("prefill_tokens")),
                                         latency=_latency_block(point, latency), engine=_engine_block(point),
                                         kv_dtype=point.kv_dtype)
    else:
        context = point.w("context_tokens")
        if context is None:
            context, note = DEFAULT_DECODE_CONTEXT, f"context not published: {DEFAULT_DECODE_CONTEXT} tokens assumed"
        result = simulator.estimate_step(model, hw, tp=point.tp, dtype=dtype, batch=batch,
                                         context_tokens=int(context),
                                         query_tokens=int(point.w("query_tokens_per_seq", 1)),
                                         latency=_latency_block(point, latency), engine=_engine_block(point),
                                         kv_dtype=point.kv_dtype)
    return Prediction(result["seconds"], result["latency_source"]["source"], note)


# ---- serving ---------------------------------------------------------------------------------------
def scheduler_defaults(fw: str | None, hardware: str, version: str | None = None,
                       entrypoint: str = "llm") -> dict:
    """The engine's default batching scheduler and limits at `version` (None: the newest).

    vLLM V1 (`EngineArgs.get_batch_defaults`, vllm/engine/arg_utils.py, keyed by UsageContext): GPUs that get
    the large defaults at that release (profiles.engine_time.batch_defaults.vllm_v1_large_defaults: from 0.9.0
    >= 70 GiB and not an A100, vLLM PR #17885; 0.8.4 H100/H200 by name, 0.8.5 >= 70 GiB) 16384 tokens (offline
    LLM class) or 8192 (API server, `vllm serve`) and 1024 sequences; others 8192 (LLM class) or 2048 (API
    server) tokens and 256 sequences; chunked prefill always; V1's own scheduler rules (`vllm_v1`) with its
    default prefix caching on (profiles.engine_time.cache_defaults.engine_prefix_caching), so a
    request's prompt blocks are reserved at admission (simulator.core.sched.vllm_v1: a request preempted
    by recompute finds its blocks in the cache; without the cache V1 thrashes 32K prompts that barely fit;
    gpt-oss's sliding-window layers keep their window's blocks under it: simulator.core.kv.sliding_window). vLLM V0 (before 0.8.0): prefill-first, no chunked prefill below 32K context, max_num_seqs 256,
    max_num_batched_tokens = max(max_model_len, 2048) (EngineArgs / SchedulerConfig of v0.5-v0.7; 32768
    taken here: a whole prompt always fits). SGLang: its chunked_prefill_size by GPU memory and release
    (profiles.engine_time.batch_defaults.sglang_chunked_prefill_size: 8192 on 80-141 GB GPUs, 4096 on a 40 GB
    A100 from 0.5.3; before, 8192 everywhere here), running requests its request pool from its KV pool
    (profiles.engine_time.batch_defaults.sglang_max_running_requests), and enable_mixed_chunk False, so a prefill batch never carries decodes
    (server_args.py): prefill-first. TensorRT-LLM PyTorch backend: its in-flight batching scheduler
    (simulator.core.sched.trtllm) with the LLM API defaults max_num_tokens 8192, max_batch_size 2048."""
    from profiles.engine_time.batch_defaults import TRTLLM_MAX_BATCH_SIZE, engine_batching, vllm_v1_large_defaults
    from profiles.engine_time.frameworks import release_or_modelled
    from profiles.hardware import get_hardware
    from simulator.cluster.vllm_memory import device_total_bytes
    fw = fw or "vllm"
    hw = get_hardware(hardware)
    version = release_or_modelled(fw, version)   # (the release the DES then models: cluster.factory.engine_release)
    try:
        kind, tokens = engine_batching(fw, version, hw, device_total_bytes(hw), entrypoint, max_model_len=32768)
    except ValueError as exc:   # (an entrypoint vLLM V1 does not have)
        raise Unpredictable(str(exc)) from None
    if fw == "sglang":   # running requests: its request pool from its KV pool, sized by the DES
        return {"kind": kind, "max_batched_tokens": tokens}   # (profiles.engine_time.batch_defaults)
    if fw == "trtllm":
        return {"kind": kind, "max_batched_tokens": tokens, "max_batch_size": TRTLLM_MAX_BATCH_SIZE}
    if kind == "vllm":   # V0
        return {"kind": kind, "max_batched_tokens": tokens, "max_batch_size": 256}
    return {"kind": kind, "max_batched_tokens": tokens,
            "max_batch_size": 1024 if vllm_v1_large_defaults(version, hw) else 256}


def _lengths(point: Point) -> tuple[int, int]:
    isl, osl = point.w("input_tokens"), point.w("output_tokens")
    if isl is None or osl is None:
        raise Unpredictable(f"prompt/output lengths of dataset {point.w('dataset')!r} are not published with "
                            "the point")
    return int(isl), int(osl)


# The benchmark client that drew a ShareGPT point's requests, by serving engine: vLLM's runs (its CI's
# benchmark_throughput.py/benchmark_serving.py, `vllm bench serve` in GPUStack's pages) use vLLM's client,
# which draws ShareGPT by one rule in every release (simulator.core.bench_clients.vllm).
SHAREGPT_CLIENTS = {"vllm": "vllm"}
# Special tokens the model's tokenizer adds to a text (`num_special_tokens_to_add()`), by model-id prefix: the
# BOS of Llama and Mistral/Mixtral tokenizers; none for Qwen's.
SPECIAL_TOKENS_BY_PREFIX = {"meta-llama/": 1, "mistralai/": 1, "Qwen/": 0}


def _length_fields(point: Point) -> dict:
    """The workload's length fields: the published fixed lengths, else (a ShareGPT point whose client is known)
    the lengths as that client draws them, with its default seed (`workload.dataset`)."""
    if point.w("input_tokens") is not None or point.w("dataset") != "sharegpt":
        isl, osl = _lengths(point)
        return {"prompt_tokens": {"kind": "fixed", "value": isl}, "output_tokens": {"kind": "fixed", "value": osl}}
    client = SHAREGPT_CLIENTS.get(point.engine)
    if client is None:
        raise Unpredictable(f"the benchmark client that drew the ShareGPT requests of engine {point.engine!r} "
                            "is not known")
    special = [n for prefix, n in SPECIAL_TOKENS_BY_PREFIX.items() if point.model.startswith(prefix)]
    if not special:
        raise Unpredictable(f"the special tokens the tokenizer of {point.model!r} adds are not known")
    from simulator.core.bench_clients import CLIENTS
    return {"dataset": {"client": client, "name": "sharegpt", "special_tokens": special[0],
                        "seed": CLIENTS[client].DEFAULT_SEED,
                        **({"release": point.framework_version} if point.framework_version else {})}}


def _client_num_prompts(mode: str, lengths: dict) -> int:
    """An offline run's request count that the publication leaves unstated: the benchmark client's own
    `--num-prompts` default where the client is known (its lengths drawn as it draws them), else 0."""
    if mode != "offline" or "dataset" not in lengths:
        return 0
    from simulator.core.bench_clients import CLIENTS
    return CLIENTS[lengths["dataset"]["client"]].DEFAULT_NUM_PROMPTS


def serving_scenario(point: Point, drafter: dict | None = None, acceptance: dict | None = None,
                     latency: dict | None = None, speculation: dict | None = None) -> dict:
    """The scenario of a serving point (see the module docstring)."""
    hw, dtype, model = _hardware(point), _dtype(point), _model(point)
    lengths = _length_fields(point)
    mode = point.w("mode")
    scheduler = scheduler_defaults(framework(point), hw, point.framework_version, point.w("entrypoint", "llm"))
    if point.w("max_num_seqs"):
        scheduler = {**scheduler, "max_batch_size": int(point.w("max_num_seqs"))}
    max_model_len = {"max_model_len": int(point.w("max_model_len"))} if point.w("max_model_len") else {}
    if mode in ("offline", "batch"):
        n = int(point.w("num_prompts") or point.w("batch") or _client_num_prompts(mode, lengths))
        if n < 1:
            raise Unpredictable("request count of the offline/batch run not published")
        arrival = {"process": "closed_loop", "concurrency": n}
        if mode == "batch":  # a static batch: all prompts prefilled together, then decoded together
            batch = int(point.w("batch") or n)
            scheduler = {"kind": "vllm", "max_batch_size": batch, "max_batched_tokens": batch * _lengths(point)[0]}
    elif mode == "concurrency":
        c = int(point.w("concurrency"))
        n = int(point.w("num_prompts") or max(MIN_CLOSED_LOOP_REQUESTS, CLOSED_LOOP_REQUESTS_PER_CLIENT * c))
        arrival = {"process": "closed_loop", "concurrency": c}
    elif mode == "poisson":
        n = int(point.w("num_prompts") or 0)
        if n < 1:
            raise Unpredictable("request count of the Poisson run not published")
        arrival = {"process": "poisson", "qps": float(point.w("qps"))}
    else:
        raise Unpredictable(f"workload mode {mode!r} not modelled")
    return {
        "name": point.id, "seed": 0,
        "workload": {"arrival": arrival, "num_requests": n, **lengths},
        "cluster": {"hardware": hw, "model": model, "dtype": dtype,
                    **({"kv_dtype": point.kv_dtype} if point.kv_dtype else {}),
                    "parallelism": {"tp": point.tp, "pp": point.pp}, "latency": _latency_block(point, latency),
                    **max_model_len,
                    **({"kv_cache": {"prefix_caching": True}} if scheduler["kind"] == "vllm_v1"
                       and "prefix_caching" not in (point.engine_flags or {}) else {}),
                    **({"engine": _engine_block(point)} if point.engine_flags else {})},
        "drafter": drafter or {"kind": "none"},
        "acceptance": acceptance or {"kind": "constant", "alpha": 0.7},
        **({"speculation": speculation} if speculation else {}),
        "scheduler": scheduler,
        "outputs": {"plots": False},
    }


class DroppedRequests(ValueError):
    """The simulated engine dropped requests that the published run served (a benchmark client counts only
    successful requests, and the publications' runs completed every one), or would not start where the
    published engine did (vLLM's start-up check, one max_model_len request in the KV cache): the prediction
    would describe another run, so it is a failed prediction, never a number (before, a run whose every
    request was dropped gave NaN, counted as predicted, and turned the summary into nan)."""


def _run(scenario: dict):
    import simulator
    from simulator.errors import ScenarioError
    try:
        result = simulator.run(scenario)
    except ScenarioError as exc:
        if exc.field == "cluster.max_model_len":   # the published engine started: draftsim's KV is too small
            raise DroppedRequests(f"draftsim's KV capacity contradicts the published run, which started and served "
                                  f"its requests: {exc}") from None
        raise Unpredictable(f"draftsim refuses the setup: {exc}") from None
    dropped = int(result.summary.get("requests_dropped", 0))
    if dropped:
        reasons = ", ".join(f"{k} {v}" for k, v in result.summary.get("dropped_by_reason", {}).items())
        raise DroppedRequests(
            f"draftsim dropped {dropped} of {len(result.requests)} requests that the published run served "
            f"({reasons}; KV capacity {result.summary.get('kv_tokens_per_replica')} tokens per replica)")
    return result


_STATISTIC = {"mean": np.mean, "single": np.mean, "median": np.median,
              "p90": lambda x: np.percentile(x, 90), "p99": lambda x: np.percentile(x, 99)}


def measured_requests(point: Point, requests):
    """The requests a benchmark client's statistics cover. Closed-loop (`concurrency`) points are
    measured in the steady state: GenAI-Perf/Perf Analyzer report stable measurement windows, so the
    first `concurrency` requests (the burst at t = 0, a filling system) and the last ones (a draining
    system) are left out. Other modes: every request."""
    done = requests[~requests["dropped"]]
    if point.w("mode") != "concurrency":
        return done
    c = int(point.w("concurrency"))
    return done.iloc[c: len(done) - c] if len(done) >= 3 * c else done


def serving_metric(point: Point, result) -> float:
    """The published quantity from a run's outputs (`measured_requests`)."""
    req = measured_requests(point, result.requests)
    ttft = (req["first_token_s"] - req["arrival_s"]).to_numpy()
    tokens = req["output_tokens"].to_numpy()
    # Per request (E2E − TTFT)/(tokens − 1): what benchmark clients report as TPOT and average as ITL.
    tpot = ((req["finish_s"] - req["first_token_s"]).to_numpy() / np.maximum(tokens - 1, 1))[tokens > 1]
    statistic = _STATISTIC[point.statistic]
    if point.kind == "ttft":
        return float(statistic(ttft))
    if point.kind in ("tpot", "itl"):
        return float(statistic(tpot))
    if point.kind == "e2e_latency":
        if point.w("mode") == "batch":  # one batch, timed from submission to the last completion
            return float(req["finish_s"].max() - req["arrival_s"].min())
        return float(statistic((req["finish_s"] - req["arrival_s"]).to_numpy()))
    if point.w("mode") == "concurrency":  # steady state: completions per second of the measured window
        finish = np.sort(req["finish_s"].to_numpy())
        rate = (len(finish) - 1) / (finish[-1] - finish[0])
        return float(rate * tokens.mean()) if point.kind == "output_throughput" else float(rate)
    span = float(req["finish_s"].max() - req["arrival_s"].min())
    return float(tokens.sum()) / span if point.kind == "output_throughput" else len(req) / span


def predict_serving(point: Point, latency: dict | None = None) -> Prediction:
    result = _run(serving_scenario(point, latency=latency))
    return Prediction(serving_metric(point, result), result.summary["latency_source"]["source"])


# ---- speculative decoding --------------------------------------------------------------------------
def _drafter(point: Point, gamma: int) -> dict:
    """The drafter a publication ran, as a scenario section: EAGLE-3 heads (the catalog head of the target),
    EAGLE-1/2 heads (one autoregressive decoder layer on the target's features), MTP modules, n-gram lookup,
    or a catalog draft model."""
    method = point.w("method")
    if method == "eagle3":
        return {"kind": "eagle3", "gamma": gamma}
    if method in ("eagle", "eagle2"):
        return {"kind": "head", "style": "autoregressive", "gamma": gamma}
    if method == "mtp":
        return {"kind": "mtp", "gamma": gamma}
    if method == "ngram":
        return {"kind": "ngram", "gamma": gamma}
    if method == "draft_model":
        from scenarios.validation.published.points import MODELS
        draft = MODELS.get(point.w("draft"))
        if draft is None:
            raise Unpredictable(f"draft model {point.w('draft')!r} is not in the catalog")
        return {"kind": "draft_model", "model": draft, "gamma": gamma}
    raise Unpredictable(f"speculation method {method!r} not modelled")


def _spec_runs(point: Point, latency: dict | None):
    """(baseline run, speculative run, note) of a speculative point: the same requests without and with the
    published drafter; acceptance from the registry row `acceptance_entry` (never from the speedup)."""
    if point.acceptance_entry is None:
        raise Unpredictable("no acceptance registry row for this draft/target pair and dataset")
    gamma = point.w("num_speculative_tokens")
    if gamma is None:
        raise Unpredictable("number of speculative tokens (or the tree) not published")
    gamma = int(gamma)
    speculation = _tree(point, gamma)
    point_lengths = point if point.w("input_tokens") is not None else _with_lengths(point)
    base = _run(serving_scenario(point_lengths, latency=latency))
    acceptance = {"kind": "published", "entry": point.acceptance_entry,
                  **({"first_alpha_entry": point.acceptance_first_alpha_entry}
                     if point.acceptance_first_alpha_entry else {})}
    spec = _run(serving_scenario(point_lengths, _drafter(point, gamma), acceptance, latency, speculation))
    from simulator.speculation.published import find_entry
    row = find_entry(point.acceptance_entry)
    note = f"acceptance {row.id} ({row.mean_tokens:.2f} tokens/step at depth {row.depth})"
    if point.acceptance_first_alpha_entry:
        note += f", α1 from {point.acceptance_first_alpha_entry}"
    note += f", γ = {gamma}" if speculation is None else \
        f", tree: {gamma} steps, top-{speculation['top_k']}, {speculation['budget']} tokens"
    return base, spec, note


def _tree(point: Point, steps: int) -> dict | None:
    """SGLang's EAGLE tree a point ran (`tree_nodes` = speculative_num_draft_tokens, `eagle_topk`, and
    `num_speculative_tokens` = speculative_num_steps), priced from its shape with the accepted path of the
    registry row (simulator.speculation.published_tree); None for a chain."""
    nodes = point.w("tree_nodes")
    if not nodes:
        return None
    if point.w("eagle_topk") is None:
        raise Unpredictable("tree speculation: speculative_eagle_topk not published")
    return {"kind": "dynamic_tree", "builder": "eagle2", "top_k": int(point.w("eagle_topk")), "depth": steps,
            "budget": int(nodes)}


def predict_spec_speedup(point: Point, latency: dict | None = None) -> Prediction:
    base, spec, note = _spec_runs(point, latency)
    if point.w("mode") == "poisson":  # latency speedup at a fixed load
        value = float(base.summary["tpot_mean_s"] / spec.summary["tpot_mean_s"])
    else:  # throughput of the same requests
        value = serving_metric_throughput(spec) / serving_metric_throughput(base)
    return Prediction(value, spec.summary["latency_source"]["source"], note)


def predict_spec_tpot(point: Point, latency: dict | None = None) -> Prediction:
    """The speculative run's TPOT (mean over requests of (E2E − TTFT) / (tokens − 1), as benchmark clients)."""
    _, spec, note = _spec_runs(point, latency)
    req = measured_requests(point, spec.requests)
    tokens = req["output_tokens"].to_numpy()
    tpot = ((req["finish_s"] - req["first_token_s"]).to_numpy() / np.maximum(tokens - 1, 1))[tokens > 1]
    return Prediction(float(_STATISTIC[point.statistic](tpot)), spec.summary["latency_source"]["source"], note)


# Chat benchmarks (MT-bench, Magpie) used by the speculation points publish no lengths; the speedup of a
# batch-1 / fixed-batch run is a ratio of decode rates, so the lengths only set how much prefill is
# amortised. Assumed: 128-token prompts, 256-token answers (stated in the report's note).
SPEC_DEFAULT_LENGTHS = (128, 256)


def _with_lengths(point: Point) -> Point:
    isl, osl = SPEC_DEFAULT_LENGTHS
    workload = dict(point.workload, input_tokens=isl, output_tokens=osl)
    if workload.get("mode") == "batch" and not workload.get("num_prompts"):
        workload["num_prompts"] = workload.get("batch")
    return point.model_copy(update={"workload": workload})


def serving_metric_throughput(result) -> float:
    req = result.requests
    return float(req["output_tokens"].sum()) / float(req["finish_s"].max() - req["arrival_s"].min())


PREDICTORS = {
    "gemm": predict_gemm,
    "attention": predict_attention,
    "decode_step": predict_step,
    "prefill_step": predict_step,
    **{kind: predict_serving for kind in ("ttft", "tpot", "itl", "e2e_latency", "output_throughput",
                                          "request_throughput")},
    "spec_speedup": predict_spec_speedup,
    "spec_tpot": predict_spec_tpot,
}


def predict(point: Point, latency: dict | None = None) -> Prediction:
    """`latency`: a `cluster.latency` override for every prediction (None: the defaults a user gets)."""
    return PREDICTORS[point.kind](point, latency)


def relative_error(predicted: float, published: float) -> float:
    """Signed relative error (predicted − published) / published."""
    return float((predicted - published) / published)


__all__ = ["DroppedRequests", "PREDICTORS", "Prediction", "Unpredictable", "predict",
           "relative_error", "scheduler_defaults", "serving_scenario"]
