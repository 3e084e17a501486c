"""One engine step, priced as the simulator prices it: `estimate_step(...)` and `draftsim estimate`.

The step is a decode step of `batch` requests, each with `context_tokens` cached tokens and
`query_tokens` new query tokens (1 for plain decoding, γ+1 for a verification), or, with
`prefill_tokens` > 0, a prefill of `batch` prompts of `prefill_tokens` tokens each after
`context_tokens` cached ones (a chunk of a longer prompt). It is priced by the same latency model,
engine-time model and step-cost code as a `draftsim run` of that model, hardware, parallelism and
`cluster.latency` block, so the numbers are the simulator's. The per-op-kind breakdown prices the op
graph op by op; for decode steps the simulator interpolates between multiples of 16 tokens of context
(simulator.cost.step_cost), so the breakdown's sum may differ from `kernel_seconds` by < 0.1 %, and where the
engine pads the batch to a CUDA-graph size (`engine_time.cuda_graphs`) the step's dense ops run over the padded
tokens, the breakdown's over the batch's own (an MoE layer's experts see the padded rows too); a source
that prices whole passes (`engine_profile`) has one kind, `pass`, the measured pass itself. The
breakdown prices ops as the tables do; where the latency model has a power limit under sustained load
(measured h100-sxm GEMMs, profiles.measured.power_limit) `power_limit` says what it adds to the step's dense
part, which `kernel_seconds` includes.

A step that cannot exist is an error (exit 2, one line naming the argument), not an estimate: requests
longer than the model's context (the context the engine release derives from the config; with
`--allow-long-context`, engine `allow_long_context`, the step's length is taken as the max_model_len given, which
the release's variable lets exceed it, as a run's `cluster.max_model_len`: profiles.engine_time.context_length),
or weights and KV cache beyond the GPU's memory (`check_step_fits`), or
more requests or tokens than the engine limits given (`--max-num-seqs`, `--max-num-batched-tokens`: the
scheduler block; `check_step_in_limits`).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from models.opgraph import step_ops
from models.ops import ATTN_DECODE, ATTN_PREFILL
from models.step import StepShape
from simulator.cost.step_cost import StepCostModel
from simulator.console.contract import parse_args

WHOLE_PASS = "pass"   # the breakdown's one kind where the latency source prices whole passes (engine_profile)


def _latency_config(latency):
    from simulator.errors import ScenarioError
    from simulator.config.serving import LatencyConfig
    if latency is None:
        return LatencyConfig()
    if isinstance(latency, LatencyConfig):
        return latency
    if not isinstance(latency, dict):
        raise ScenarioError("latency", "expected a mapping like the scenario's cluster.latency block")
    from simulator.config.validation import validate_config
    # (a rule of the whole block reads `latency: <its message>`, not `latency: Value error, ...`)
    return validate_config(LatencyConfig, latency, "latency")


def _engine_config(engine, latency):
    """`engine` (a cluster.engine block) validated; its framework also prices the kernels unless `latency`
    names one (as in a scenario)."""
    from simulator.config.engine import EngineConfig
    from simulator.config.validation import validate_config
    from simulator.errors import ScenarioError
    if engine is None:
        return None
    if not isinstance(engine, dict):
        raise ScenarioError("engine", "expected a mapping like the scenario's cluster.engine block")
    return validate_config(EngineConfig, engine, "engine")


def _scheduler_config(scheduler):
    from simulator.config.validation import validate_config
    from simulator.config.serving import SchedulerConfig
    from simulator.errors import ScenarioError
    if scheduler is None:
        return None
    if not isinstance(scheduler, dict):
        raise ScenarioError("scheduler", "expected a mapping like the scenario's scheduler block")
    # (as a scenario's: a rule of the whole block is `scheduler: <its message>`, not `scheduler.: Value error, ...`)
    return validate_config(SchedulerConfig, scheduler, "scheduler")


def _counts(**counts) -> list[int]:
    """The counts as Python ints, in order. A NumPy integer (`for b in np.arange(...)`) was refused as 'must
    be an integer >= 1, got np.int64(4)'; a boolean, Python's or NumPy's, is no count."""
    from models.errors import is_integer
    from simulator.errors import ScenarioError
    for name, value in counts.items():
        low = 1 if name in ("tp", "batch", "query_tokens") else 0
        if not is_integer(value) or value < low:
            raise ScenarioError(name, f"must be an integer >= {low}, got {value!r}")
    return [int(value) for value in counts.values()]


def check_step_fits(spec, hw, par, dtype: str, kv_dtype: str, batch: int, context_tokens: int,
                    new_tokens: int, new_field: str = "query_tokens", context_len: int | None = None) -> None:
    """Refuse (ScenarioError naming the argument) a step that cannot exist: a request longer than the
    model's context (`context_len`, the context the engine derives from its config.json:
    profiles.engine_time.context_length; None: `max_position_embeddings`), or weights plus the step's KV cache beyond the GPU's whole
    memory (what CUDA reports where the catalog logs it, `cuda_total_bytes`, else the datasheet's `hbm_bytes`, as
    the engines' memory rules read it: simulator.cluster.vllm_memory.device_total_bytes; a serving engine keeps
    memory back, so this only refuses what certainly cannot run — the datasheet's decimal "80 GB" of an H100 is
    79.19 GiB = 85.0 GB to CUDA). An estimate of such a step would be a number for a machine that does not exist."""
    from models.moe_routing import weight_bytes_per_gpu
    from simulator.cluster.vllm_memory import device_total_bytes
    from simulator.errors import ScenarioError

    length, limit = context_tokens + new_tokens, context_len or spec.max_position_embeddings
    if length > limit:   # (on the count that is over alone, else on the cached tokens)
        field = new_field if new_tokens > limit else "context_tokens"
        how = "max_position_embeddings" if context_len is None else "as the engine derives it from the config"
        longer = "" if context_len is None else \
            ", or --allow-long-context (the engine's variable for a longer max_model_len, where its release has one)"
        raise ScenarioError(field, f"{context_tokens} cached + {new_tokens} new tokens exceed the context of "
                                   f"{spec.name}, {limit} tokens ({how}); allowed: at most {limit}{longer}")
    weights = weight_bytes_per_gpu(spec, par, dtype) if par.ep > 1 else spec.weight_bytes(dtype) / par.gpus
    memory, gib = device_total_bytes(hw), float(1 << 30)   # (`new_field`: the argument that gave new_tokens)
    if weights > memory:
        raise ScenarioError("model", f"{spec.name} needs {weights / gib:,.1f} GiB of {dtype} weights per GPU at "
                                     f"tp={par.tp} but {hw.id} has {memory / gib:,.1f} GiB; raise --tp")
    kv = batch * length * spec.kv_bytes_per_token_per_gpu(par, kv_dtype)
    if weights + kv > memory:
        raise ScenarioError("batch", f"{batch:,} requests of {length:,} token(s) need {kv / gib:,.4g} GiB of KV "
                                     f"cache per GPU beside {weights / gib:,.1f} GiB of weights; {hw.id} has "
                                     f"{memory / gib:,.1f} GiB")


def check_step_in_limits(limits, batch: int, new_tokens: int, prefill: bool) -> None:
    """Refuse (ScenarioError naming the argument) a step beyond the engine limits the caller set (`limits`: the
    scheduler block given, with its max_batch_size and max_batched_tokens): an engine never schedules more
    requests or tokens in one step (--batch 300 under --max-num-seqs 256 was priced, exit 0)."""
    from simulator.errors import ScenarioError
    if limits.max_batch_size is not None and batch > limits.max_batch_size:
        raise ScenarioError("batch", f"{batch:,} requests in one step exceed the engine's max running requests, "
                                     f"{limits.max_batch_size:,} (--max-num-seqs, scheduler.max_batch_size)")
    if batch * new_tokens > limits.max_batched_tokens:
        raise ScenarioError("batch", f"{batch:,} x {new_tokens:,} new tokens in one step exceed the engine's token "
                                     f"budget, {limits.max_batched_tokens:,} (--max-num-batched-tokens, "
                                     "scheduler.max_batched_tokens)" + (
                                         "; a longer prompt is prefilled in chunks: give one chunk as "
                                         "--prefill-tokens after --context cached tokens" if prefill else ""))


def estimate_step(model: str, hardware: str, *, tp: int = 1, dtype: str | None = None, batch: int = 1,
                  context_tokens: int = 0, query_tokens: int = 1, prefill_tokens: int = 0,
                  latency=None, kv_dtype: str | None = None, engine=None, scheduler=None) -> dict:
    """The step's seconds (kernels + engine time), its op-kind breakdown and what priced it (see the
    module docstring). `latency`: a `cluster.latency` block as a dict (e.g. {"source": "measured",
    "framework": "vllm"}) or None for the default; `engine`: a `cluster.engine` block as a dict (framework,
    version, cuda_graphs, ...) or None; `scheduler`: a scenario's scheduler block as a dict (its
    max_batch_size and max_batched_tokens set the engine's CUDA-graph capture sizes; default: the engine's own
    running-request limit, profiles.engine_time.batch_defaults, and 8192).
    ScenarioError naming the argument on bad input."""
    from models.spec import DTYPE_BYTES, KV_DTYPES
    from profiles.select import LATENCY_SOURCES, describe_latency
    from simulator.errors import ScenarioError
    from models.quant_config import QuantConfigError, served_dtype
    from simulator.cluster.factory import build_replica_kind, resolve_hardware, resolve_model
    from simulator.cluster.implied import naming_implied, release_notes
    from simulator.config.validation import validate_config
    from simulator.config.serving import MoeConfig, ParallelismConfig
    from simulator.config.base import path_as_text

    model, hardware = path_as_text(model), path_as_text(hardware)   # (a Path to a config.json or hardware YAML)
    tp, batch, context_tokens, query_tokens, prefill_tokens = _counts(
        tp=tp, batch=batch, context_tokens=context_tokens, query_tokens=query_tokens, prefill_tokens=prefill_tokens)
    new_tokens = prefill_tokens if prefill_tokens else query_tokens
    weight_dtypes = [d for d in DTYPE_BYTES if d != "int8"]
    if dtype is not None and dtype not in weight_dtypes:
        raise ScenarioError("dtype", f"{dtype!r} is not supported; allowed: {', '.join(weight_dtypes)}")
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise ScenarioError("kv_dtype", f"{kv_dtype!r} is not supported; allowed: {', '.join(KV_DTYPES)}")
    if isinstance(engine, dict) and engine.get("framework") and not (isinstance(latency, dict) and "framework" in latency):
        latency = {**(latency or {}), "framework": engine["framework"]}
    try:   # (ParallelismConfig(tp=...) alone raised a ValidationError whose first line named no field)
        parallelism = validate_config(ParallelismConfig, {"tp": tp}, "parallelism")
        latency_config, engine_config = _latency_config(latency), _engine_config(engine, latency)
        limits = _scheduler_config(scheduler)
        target = resolve_model(model, Path.cwd())
        try:
            dtype = served_dtype(dtype, target)
        except QuantConfigError as exc:
            raise ScenarioError("dtype", str(exc)) from None
        latencies: dict = {}
        # (engine.allow_long_context: the step's length is the max_model_len given, which the release's variable
        # lets exceed the context it derives, as a run's cluster.max_model_len: simulator.core.context)
        long_context = context_tokens + new_tokens if getattr(engine_config, "allow_long_context", None) else None

        def notes() -> dict[str, str]:   # (the engine release `latency` and `engine` leave out: its source)
            latency_model = latencies.get(resolve_hardware(hardware, Path.cwd(), "hardware").id)
            return {} if latency_model is None else \
                release_notes(latency_config, engine_config, latency_model, lambda key: key and f"latency.{key}")

        with naming_implied(notes, release_named=True):
            kind = build_replica_kind(model=target, hardware=hardware, parallelism=parallelism, dtype=dtype,
                                      latency=latency_config, moe=MoeConfig(), memory_utilization=None,
                                      price_only=True, base_dir=Path.cwd(), where="estimate", latencies=latencies,
                                      kv_dtype=kv_dtype, engine_config=engine_config, scheduler=limits,
                                      max_model_len=long_context)
    except ScenarioError as exc:  # name the argument, not a scenario field
        field = {"cluster.model": "model", "estimate.hardware": "hardware", "cluster.hardware": "hardware",
                 "cluster.dtype": "dtype",
                 "cluster.kv_dtype": "kv_dtype",
                 "cluster.latency.source": "source", "cluster.latency.version": "version",
                 "cluster.latency.framework": "framework"}.get(
            exc.field, "tp" if "parallelism" in exc.field else exc.field)
        inside = exc.field.removeprefix("estimate.hardware.")
        if inside != exc.field:   # a field of the hardware file (it said `estimate.hardware.hbm_bytes: ...`, a
            # block the command line has none of): `--hardware: hbm_bytes: ...`
            raise ScenarioError("hardware", f"{inside}: {exc.message}") from None
        raise ScenarioError(field, exc.message, exc.implied) from None
    spec, hw, par, lat, engine, cost = kind.target, kind.hardware, kind.parallelism, kind.latency, kind.engine, kind.cost
    check_step_fits(spec, hw, par, dtype, kind.kv_dtype, batch, context_tokens, new_tokens,
                    "prefill_tokens" if prefill_tokens else "query_tokens", kind.context_len)
    if limits is not None:
        check_step_in_limits(limits, batch, new_tokens, prefill_tokens > 0)
    if prefill_tokens:
        pairs = batch * (prefill_tokens * context_tokens + prefill_tokens * (prefill_tokens + 1) // 2)
        shape = StepShape(prefill_tokens=batch * prefill_tokens, prefill_seqs=batch, prefill_attn_pairs=pairs)
        target = cost.step(batch * prefill_tokens, batch, pairs, 0, 0).target
    else:
        shape = StepShape(decode_seqs=batch, query_tokens_per_seq=query_tokens,
                          decode_context_tokens=batch * context_tokens)
        decode = StepCostModel(cost.target, None, 0, verify_q=query_tokens, engine=engine) \
            if query_tokens != 1 else cost
        target = decode.step(0, 0, 0, batch, batch * context_tokens).target
    breakdown: dict[str, float] = {}
    ops = []
    priced = step_ops(spec, shape, par, dtype, kind.kv_dtype)
    if LATENCY_SOURCES[latency_config.source].whole_passes:
        # engine_profile prices the real engine's whole measured pass; its op prices are the roofline's, of
        # which only FLOPs and bytes are used, so an op-kind breakdown would not add up to the step (a 300-token
        # prefill: 0.49 s of ops against a 5.4 s pass)
        priced = []
        breakdown[WHOLE_PASS] = target.seconds - target.engine_s
        ops.append({"name": "forward pass", "kind": WHOLE_PASS, "count": 1, "seconds": breakdown[WHOLE_PASS]})
    for op in priced:
        seconds = op.count * lat.op_seconds(op)
        breakdown[op.kind] = breakdown.get(op.kind, 0.0) + seconds
        ops.append({"name": op.name, "kind": op.kind, "count": op.count, "seconds": seconds})
    return {
        "seconds": target.seconds,
        "kernel_seconds": target.seconds - target.engine_s,
        "engine_seconds": target.engine_s,
        "breakdown": breakdown,
        "ops": ops,
        "flops": target.flops * par.tp,
        "bytes": target.bytes * par.tp,
        "latency_source": describe_latency(lat),
        "power_limit": _power_limit(lat, priced, ops),
        "engine_time": engine.describe() if engine is not None else None,
        "profile": _profile_summary(lat),
        "step": {"model": spec.name, "hardware": hw.id, "tp": tp, "dtype": dtype, "kv_dtype": kind.kv_dtype, "batch": batch,
                 "context_tokens": context_tokens, "query_tokens": query_tokens if not prefill_tokens else 0,
                 "prefill_tokens": prefill_tokens},
    }


def _power_limit(lat, ops, rows: list[dict]) -> dict | None:
    """What the board's power limit under sustained load adds to the step's dense ops (`rows`: the ops'
    table prices, as the breakdown lists them; profiles.measured.power_limit), or None where the latency
    model has none."""
    limit = getattr(lat, "power_limit", None)
    if limit is None:
        return None
    attention = (ATTN_PREFILL, ATTN_DECODE)
    limited, share = lat.sustained_seconds([op for op in ops if op.kind not in attention])
    tables = sum(row["seconds"] for row in rows if row["kind"] not in attention)   # in op order, as summed above
    return {"compute_bound_share": share, "factor": limit.factor(share), "seconds": limited - tables,
            "data": limit.data}


def _profile_summary(lat) -> dict | None:
    """For `source: profile`: the profiled device, its date, timing method and the kernel that ran each op
    kind (the profile's fingerprint), so the estimate says what measured its prices."""
    fp = getattr(lat, "fingerprint", None)
    if not fp:
        return None
    method = fp.get("timing", {}).get("method", "eager")
    return {"device_name": fp.get("device_name"), "date": fp.get("date"), "torch_version": fp.get("torch_version"),
            "timing": method.split(":")[0], "kernels": fp.get("kernels", {})}


def format_estimate(result: dict) -> str:
    from simulator.results.latency_source import format_latency_source
    st = result["step"]
    what = (f"prefill of {st['batch']} x {st['prefill_tokens']} tokens after {st['context_tokens']} cached"
            if st["prefill_tokens"] else
            f"decode of {st['batch']} requests x {st['query_tokens']} query tokens at {st['context_tokens']} "
            "context tokens each")
    kv = f" (KV {st['kv_dtype']})" if st.get("kv_dtype") not in (None, st["dtype"]) else ""
    lines = [f"{st['model']} on {st['hardware']} tp{st['tp']} {st['dtype']}{kv}: {what}",
             f"{'step':<14}{result['seconds'] * 1e3:10.3f} ms",
             f"{'kernels':<14}{result['kernel_seconds'] * 1e3:10.3f} ms",
             f"{'engine time':<14}{result['engine_seconds'] * 1e3:10.3f} ms"]
    total = sum(result["breakdown"].values()) or 1.0
    kinds = result["latency_source"].get("op_kinds", {})
    profile = result.get("profile")
    for kind, seconds in sorted(result["breakdown"].items(), key=lambda kv: -kv[1]):
        source = kinds.get(kind, {}).get("source", result["latency_source"].get("source", ""))
        if profile and profile["kernels"].get(kind):
            source = f"profile: {profile['kernels'][kind]}"
        lines.append(f"  {kind:<12}{seconds * 1e3:10.3f} ms {100 * seconds / total:6.1f} %   {source}")
    limit = result.get("power_limit")
    if limit is not None and limit["seconds"]:
        lines.append(f"  {'power limit':<12}{limit['seconds'] * 1e3:+10.3f} ms   dense part x {limit['factor']:.3f} at "
                     f"compute-bound share {limit['compute_bound_share']:.2f} (sustained load, {limit['data']})")
    lines.append(f"latency: {format_latency_source(result['latency_source'])}")
    if profile:
        lines.append(f"profile: {profile['device_name']}, {profile['date']}, torch {profile['torch_version']}, "
                     f"timed by {profile['timing']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="draftsim estimate", description=(
        "Price one engine step exactly as the simulator does (kernels by op kind, engine time)."))
    p.add_argument("--model", required=True, help="catalog model (draftsim catalog models), a Hugging Face config.json or a "
                   "catalog-format model YAML")
    p.add_argument("--hardware", required=True, help="catalog hardware (draftsim catalog hardware) or a hardware YAML")
    p.add_argument("--tp", type=int, default=1, help="tensor parallelism (default 1)")
    p.add_argument("--dtype", default=None, help="weights: fp32 | bf16 | fp16 | fp8 | fp8_block | int4 | nvfp4 | mxfp4 (default: "
                   "a quantized config.json's own format, else bf16)")
    p.add_argument("--kv-dtype", default=None, help="KV cache: fp32 | bf16 | fp16 | fp8 | nvfp4 (default: the engine release's own for the checkpoint, "
                   "e.g. bf16 for fp8 weights under vLLM and SGLang, fp8 under TensorRT-LLM)")
    p.add_argument("--batch", type=int, default=1, help="requests (decode) or prompts (prefill) in the step")
    p.add_argument("--context", type=int, default=0, help="cached tokens per request (default 0)")
    p.add_argument("--query-tokens", type=int, default=1, help="query tokens per decode request (γ+1 to verify)")
    p.add_argument("--prefill-tokens", type=int, default=0, help="prompt tokens per request: a prefill step")
    p.add_argument("--source", default=None, help="latency source: auto | measured | profile | roofline | engine_profile "
                   "(with --profile-dir)")
    p.add_argument("--framework", default=None, help="serving framework: vllm | sglang | trtllm")
    p.add_argument("--version", default=None, help="framework version of the measured tables (default newest)")
    p.add_argument("--profile-dir", default=None, help="with --source profile: the profile directory written by "
                   "draftsim profile (default: profiles/data/<hardware>/); with --source engine_profile (required): "
                   "one written by draftsim profile --engine vllm")
    p.add_argument("--no-engine-time", action="store_true", help="kernels only")
    p.add_argument("--engine-version", default=None, help="serving-engine release to model (cluster.engine.version)")
    p.add_argument("--cuda-graphs", default=None, choices=["full", "piecewise", "none"],
                   help="CUDA-graph mode (cluster.engine.cuda_graphs; default: the engine version's)")
    p.add_argument("--async-scheduling", default=None, choices=["on", "off"],
                   help="host work overlapped with the GPU (cluster.engine.async_scheduling; default: the version's)")
    p.add_argument("--host-cpu", default=None, help="host CPU (cluster.engine.host_cpu): a catalog id, or the host's "
                   "calibration_us (µs of profiles/engine_time/measure_launch.py --host-only)")
    p.add_argument("--allow-long-context", action="store_const", const=True, default=None,
                   help="a step longer than the context the engine release derives from the config, as the engine "
                        "serves it with its variable set (cluster.engine.allow_long_context: "
                        "VLLM_ALLOW_LONG_MAX_MODEL_LEN from vLLM 0.5.4, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN, "
                        "TLLM_ALLOW_LONG_MAX_MODEL_LEN)")
    p.add_argument("--max-num-seqs", type=int, default=None,
                   help="the engine's max running requests (sets its CUDA-graph capture sizes; default: the engine's "
                        "own for its release and hardware, e.g. vLLM V1 1024 on an H100, 256 on an A100)")
    p.add_argument("--max-num-batched-tokens", type=int, default=None,
                   help="the engine's token budget of a step (scheduler.max_batched_tokens; at least --max-num-seqs; "
                        "default 8192)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


SCHEDULER_FLAGS = {"max_batch_size": "--max-num-seqs", "max_batched_tokens": "--max-num-batched-tokens"}
# the engine block's fields (cluster.engine.*, estimate_step's `engine`) and the flags that set them
ENGINE_FLAGS = {"version": "--engine-version", "cuda_graphs": "--cuda-graphs", "host_cpu": "--host-cpu",
                "async_scheduling": "--async-scheduling", "allow_long_context": "--allow-long-context"}
TIMED = ("version", "cuda_graphs", "host_cpu", "async_scheduling")   # the engine flags --no-engine-time drops


# the latency block's fields (estimate_step's `latency`, a scenario's cluster.latency) and the flags that set them
LATENCY_FLAGS = {"source": "--source", "framework": "--framework", "version": "--version",
                 "profile_dir": "--profile-dir"}


# estimate_step's arguments (the fields its errors name, as a Python caller passes them) and the flags that set them
ARGUMENT_FLAGS = {"model": "--model", "hardware": "--hardware", "tp": "--tp", "dtype": "--dtype",
                  "kv_dtype": "--kv-dtype", "batch": "--batch", "context_tokens": "--context",
                  "query_tokens": "--query-tokens", "prefill_tokens": "--prefill-tokens"}


def _latency_in_flags(text: str) -> str:
    """`text` (simulator.cluster.implied's note of a release the flags left out) with the latency block's fields
    its flags."""
    return re.sub(r"\blatency\.(framework|version)\b", lambda m: LATENCY_FLAGS[m.group(1)], text)


def _in_flags(exc: Exception) -> str:
    """`_field_in_flags`, and a refusal's closing note of the release the flags left out, "(cluster.engine.version not
    given: trtllm 1.0.0, ...)" (simulator.cluster.implied), in the flags' words."""
    return re.sub(r"\(cluster\.engine\.version not given: ([^()]*)\)$",
                  lambda m: f"({ENGINE_FLAGS['version']} not given: {_latency_in_flags(m.group(1))})",
                  _field_in_flags(exc))


def _field_in_flags(exc: Exception) -> str:
    """The error in the words of the command line: the scheduler block's fields are the flags that set them
    (`--max-num-batched-tokens (8192) must be >= --max-num-seqs (1000000000)`, not `scheduler: max_batched_tokens
    ...`, which names a block the command line has none of)."""
    from simulator.errors import ScenarioError
    if not isinstance(exc, ScenarioError):
        return str(exc)
    if exc.field in ARGUMENT_FLAGS:   # (it said `batch: ...`, `context: ...`, `tp: ...`: no flag of those names)
        # (a measured table's advice, 'or use cluster.latency.source: roofline', is --source's)
        return f"{ARGUMENT_FLAGS[exc.field]}: {exc.message.replace('cluster.latency.source: ', '--source ')}"
    if exc.field in ("latency", "cluster.latency"):   # a rule of the block, worded with its fields: the flags'
        # names ('latency: version selects measured tables; it needs source: measured or auto' named a block and
        # fields the command line has none of)
        text = exc.message.replace("source: ", "source ")   # (`source: X`, the YAML's, is `--source X`)
        return re.sub(r"\b(source|framework|version|profile_dir)\b", lambda m: LATENCY_FLAGS[m.group(1)], text)
    block, _, key = exc.field.removeprefix("cluster.").partition(".")
    if (block == "latency" and key in LATENCY_FLAGS) or exc.field in LATENCY_FLAGS:
        # (it said latency.framework, cluster.latency.profile_dir: the fields of a block the command line has none of)
        return f"{LATENCY_FLAGS[key or exc.field]}: {exc.message}"
    if block == "engine" and key.split(".")[0] in ENGINE_FLAGS:   # (it said cluster.engine.host_cpu: ...)
        implied = "" if exc.implied is None else f" (not given: {_latency_in_flags(exc.implied)})"   # (a release the
        from profiles.engine_time.host import CALIBRATION_FORM   # flags left out: what implied it)
        # (--host-cpu takes the number itself: "or give {calibration_us: N}" was the scenario's form, which the flag
        # refuses as an unknown host)
        message = exc.message.replace(CALIBRATION_FORM, "--host-cpu N, the host's calibration_us in µs,")
        return f"{ENGINE_FLAGS[key.split('.')[0]]}{implied}: {message}"
    if exc.field.split(".")[0] != "scheduler":
        return str(exc)
    text = exc.message if exc.field == "scheduler" else f"{exc.field.removeprefix('scheduler.')}: {exc.message}"
    for key, flag in SCHEDULER_FLAGS.items():   # (the field's full name first: `set scheduler.max_batch_size`
        text = text.replace(f"scheduler.{key}", flag).replace(key, flag)   # read `set scheduler.--max-num-seqs`)
    return text


def _given(args: argparse.Namespace, flags: dict[str, str]) -> dict:
    """Block field -> the value of its flag, for the flags given (`flags`: field -> flag)."""
    values = {key: getattr(args, flag[2:].replace("-", "_")) for key, flag in flags.items()}
    return {key: value for key, value in values.items() if value is not None}


def main(argv: list[str] | None = None) -> int:
    from models.errors import ascii_number
    from simulator.errors import ScenarioError
    args = parse_args(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.prefill_tokens and args.query_tokens != 1:
        print("draftsim estimate: error: --query-tokens applies to decode steps, not with --prefill-tokens",
              file=sys.stderr)
        return 2
    latency = {k: v for k, v in (("source", args.source), ("framework", args.framework),
                                 ("version", args.version), ("profile_dir", args.profile_dir)) if v is not None}
    engine = _given(args, ENGINE_FLAGS)
    if args.no_engine_time:
        latency["engine_time"] = False
        timed = [key for key in engine if key in TIMED]
        if timed:   # (each was taken and dropped: the step's kernels are priced without an engine)
            flag = ENGINE_FLAGS[timed[0]]
            print(f"draftsim estimate: error: {flag} models the engine's time and CUDA-graph padding, which "
                  "--no-engine-time leaves out; give one or the other", file=sys.stderr)
            return 2
    if "async_scheduling" in engine:   # (on / off)
        engine["async_scheduling"] = engine["async_scheduling"] == "on"
    if "host_cpu" in engine:   # a catalog id, or a number: its calibration_us, as cluster.engine.host_cpu takes
        try:
            engine["host_cpu"] = {"calibration_us": ascii_number(float, engine["host_cpu"])}
        except ValueError:
            pass
    scheduler = _given(args, SCHEDULER_FLAGS)
    try:
        result = estimate_step(args.model, args.hardware, tp=args.tp, dtype=args.dtype, batch=args.batch,
                               context_tokens=args.context, query_tokens=args.query_tokens,
                               prefill_tokens=args.prefill_tokens, latency=latency, kv_dtype=args.kv_dtype,
                               engine=engine or None, scheduler=scheduler or None)
    except (ScenarioError, ValueError) as exc:
        print(f"draftsim estimate: error: {_in_flags(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1, default=float) if args.json else format_estimate(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
