"""`draftsim profile --check`: do whole forwards cost what the sum of their profiled ops says?

For each check shape, the same torch model the profile describes (`models.torch_impl.fused.FusedDecoder`,
random weights, the device's kernel set) runs whole forward passes, and their measured time is compared
with the price of the same step from the profile: Σ over the op graph's ops (`models.opgraph.step_ops`) of
`ProfiledLatencyModel.op_seconds`, plus its host-overhead term (CPU profiles; 0 on GPUs). The error is
predicted / measured − 1; the command exits 1 when any |error| exceeds `TOLERANCE`.

How a forward is timed, as engines run it:
- CUDA decode and verify: the whole forward (embedding … sampling) captured once in a CUDA graph and
  replayed (vLLM replays decode batches from graphs), timed with events; median of `reps` replays.
- CUDA prefill: eager (engines run prefill eagerly or piecewise; launch gaps hide behind 2k-token
  kernels), events around the pass after a synchronisation; median.
- CPU: wall clock of `forward` (host work included, as the profile's host-overhead rows are), median.
Shapes (`SHAPES`): decode at batch 1, 32 and 128 × 2,048 context; verification of 4 tokens × 32 and a
tree of 8 nodes × 16 requests at 2,048; a 2,048-token prefill; and a decode of the drafter (the smallest
other model of `--models`) at batch 32 × 2,048. Every shape lies on the profile's grid (GPU_GRID) where the
profile was made with the default grid, so the check tests the op decomposition and the kernels, not the
interpolation.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import torch

from models.catalog import get_model
from models.files import ready_to_write
from models.opgraph import step_ops
from models.spec import ModelSpec
from models.step import Parallelism, StepShape, chunk_attention_pairs
from profiles.profiler.timing import capture_graph, replay_seconds

TOLERANCE = 0.10
CHECK_FILE = "check.json"
TARGET, DRAFTER = "target", "drafter"


@dataclass(frozen=True)
class CheckShape:
    """A decode/verify group of `seqs` × `q` new tokens after `ctx` cached each (tree: an ancestor mask),
    or (prefill > 0) one prefill chunk of `prefill` tokens; run on the target or the drafter model."""

    name: str
    model: str = TARGET
    seqs: int = 1
    q: int = 1
    ctx: int = 0
    prefill: int = 0
    tree: bool = False

    def step_shape(self) -> StepShape:
        if self.prefill:
            return StepShape(prefill_tokens=self.prefill, prefill_seqs=1,
                             prefill_attn_pairs=chunk_attention_pairs(self.prefill, 0))
        return StepShape(decode_seqs=self.seqs, query_tokens_per_seq=self.q, decode_context_tokens=self.seqs * self.ctx,
                         tree_attention=self.tree)

    @property
    def kv_tokens(self) -> int:
        return self.prefill if self.prefill else self.seqs * (self.ctx + self.q)


SHAPES = (
    CheckShape("decode b1 x 2k", seqs=1, ctx=2048),
    CheckShape("decode b32 x 2k", seqs=32, ctx=2048),
    CheckShape("decode b128 x 2k", seqs=128, ctx=2048),
    CheckShape("verify q4 b32 x 2k", seqs=32, q=4, ctx=2048),
    CheckShape("tree q8 b16 x 2k", seqs=16, q=8, ctx=2048, tree=True),
    CheckShape("prefill 2k", prefill=2048),
    CheckShape("drafter decode b32 x 2k", model=DRAFTER, seqs=32, ctx=2048),
)
QUICK_SHAPES = (
    CheckShape("decode b2 x 16", seqs=2, ctx=16),
    CheckShape("verify q3 b2 x 16", seqs=2, q=3, ctx=16),
    CheckShape("tree q3 b2 x 16", seqs=2, q=3, ctx=16, tree=True),
    CheckShape("prefill 16", prefill=16),
    CheckShape("drafter decode b2 x 16", model=DRAFTER, seqs=2, ctx=16),
)


def load_profile(profile_dir: str | Path, flag: str):
    """The profile at `profile_dir` as the check prices from it (ProfiledLatencyModel); ValueError naming `flag`
    when it cannot be read (a table that is no profile table, no fingerprint, a device the catalog lacks): it
    was a traceback after the memory check, with `--check-only` on a damaged profile."""
    from profiles.predictor import ProfiledLatencyModel
    try:
        return ProfiledLatencyModel(profile_dir)
    except (ValueError, KeyError, TypeError) as exc:   # (KeyError, TypeError: rows of the wrong types)
        text = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        text = text if len(text) <= 200 else text[:200] + " ..."
        raise ValueError(f"{flag}: {str(profile_dir)!r} holds no profile that can be checked ({text})") from None


def check_matches_profile(fingerprint: dict, profile_dir: str | Path, specs: Sequence[ModelSpec], dtype: str,
                          threads: int, device: str) -> None:
    """ValueError naming the flag when the check would not run what the profile measured: a model it did not
    profile (`--models`), another dtype (`--dtype`) or, on a CPU, another thread count (`--threads`). The check
    compares whole forwards with the profile's sum of the same ops; with any of these different it compares
    two different things and says 'FAILED' (or 'passed') about a profile it never tested: `--check-only
    --dtype bf16 --threads 1` of an fp32, 2-thread profile ran and reported errors of up to 156 %. A fingerprint
    without the field (none shipped) is not compared."""
    measured = fingerprint.get("models")
    if isinstance(measured, list):
        known = {str(name).lower() for name in measured}
        missing = [spec.name for spec in specs if spec.name.lower() not in known]
        if missing:
            raise ValueError(f"--models: {', '.join(missing)} not in the profile at {str(profile_dir)!r}, which "
                             f"measured {', '.join(map(str, measured))}; check models it measured")
    if fingerprint.get("dtype") not in (None, dtype):
        raise ValueError(f"--dtype: {dtype}, but the profile at {str(profile_dir)!r} was measured in "
                         f"{fingerprint['dtype']}; give --dtype {fingerprint['dtype']}")
    if device == "cpu" and fingerprint.get("threads") not in (None, threads):
        raise ValueError(f"--threads: {threads}, but the profile at {str(profile_dir)!r} was measured with "
                         f"{fingerprint['threads']} thread(s); give --threads {fingerprint['threads']}")


# the files of a profile folder that the check's JSON must not replace (profiles.profiler.table)
PROFILE_FILES = ("ops.csv", "ops.partial.csv", "fingerprint.json")


def check_out_problem(check_out: str | Path | None, profile_dir: Path, package_data: bool) -> str | None:
    """Why `check_out` (--check-out) cannot receive the check's JSON, or None: it is one of the profile's own
    files (`--check-out DIR/ops.csv` replaced the table it checked with the check's JSON: the profile was
    gone), or it lies in the shipped profiles' folder (profiles.predictor.DATA_DIR) without --package-data,
    which alone writes there."""
    from models.files import expand_home
    from profiles.predictor import DATA_DIR
    if check_out is None:
        return None
    try:
        target = expand_home(check_out).resolve()
        own = {(profile_dir / name).resolve() for name in PROFILE_FILES}
        shipped = DATA_DIR.resolve()
    except (OSError, RuntimeError, ValueError):   # (a path the file system cannot look up: named when written)
        return None
    if target in own:
        return f"{check_out} is the profile's own {target.name}; give another file for the check's JSON"
    if not package_data and shipped in target.parents:
        return (f"{check_out} is inside the shipped profiles' folder ({Path(*DATA_DIR.parts[-2:])}/), which only "
                "--package-data writes; give another file")
    return None


def check_models(models: Sequence[str]) -> tuple[ModelSpec, ModelSpec | None]:
    """The target (the first model) and the drafter (the smallest other model, or None)."""
    specs = [get_model(m) for m in models]
    others = sorted(specs[1:], key=lambda s: s.param_count())
    return specs[0], (others[0] if others else None)


def predicted_breakdown(latency, spec: ModelSpec, shape: CheckShape, dtype: str) -> tuple[float, dict[str, float]]:
    """The profile's price of the step: Σ op seconds of the op graph + the host-overhead term, and the
    seconds per op kind (host overhead under `host`)."""
    step = shape.step_shape()
    by_kind: dict[str, float] = {}
    for op in step_ops(spec, step, Parallelism(), dtype):
        by_kind[op.kind] = by_kind.get(op.kind, 0.0) + op.count * latency.op_seconds(op)
    host = latency.host_overhead_s(spec.num_layers, step.num_tokens)
    if host:
        by_kind["host"] = host
    return sum(by_kind.values()), by_kind


def predicted_seconds(latency, spec: ModelSpec, shape: CheckShape, dtype: str) -> float:
    """The profile's price of the step (`predicted_breakdown`'s total)."""
    return predicted_breakdown(latency, spec, shape, dtype)[0]


def _inputs(spec: ModelSpec, shape: CheckShape, device: torch.device, seed: int):
    from models.torch_impl.fused import DecodeGroup, PrefillChunk
    from profiles.profiler.benches import tree_ancestor_mask
    gen = torch.Generator().manual_seed(seed)
    if shape.prefill:
        return [PrefillChunk(torch.randint(0, spec.vocab_size, (shape.prefill,), generator=gen), 0, 0)], None
    ids = torch.randint(0, spec.vocab_size, (shape.seqs, shape.q), generator=gen)
    tree = tree_ancestor_mask(shape.q, device) if shape.tree and shape.q > 1 else None
    return [], DecodeGroup(ids, list(range(shape.seqs)), [shape.ctx] * shape.seqs, tree)


def measure_seconds(decoder, spec: ModelSpec, shape: CheckShape, reps: int, seed: int = 0,
                    observed: dict | None = None) -> float:
    """Median seconds of the whole forward of `shape` (module docstring for how). On CUDA, `observed` (a
    dict) receives what one more forward's kernels were (`_observe`)."""
    device = decoder.device
    chunks, group = _inputs(spec, shape, device, seed)
    decoder.allocate_cache(max(shape.seqs, 1), (shape.ctx + shape.q if not shape.prefill else shape.prefill) + 16,
                           random_fill=True)
    try:
        if device.type == "cuda" and group is not None:
            return _graph_seconds(decoder, group, reps, observed)
        samples = []
        for i in range(reps + 1):
            samples.append(_eager_seconds(decoder, chunks, group))
        if device.type == "cuda" and observed is not None:
            _observe(lambda: decoder.forward(chunks, group), device, observed)
        return statistics.median(samples[1:])
    finally:
        decoder.keys, decoder.values = [], []
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _eager_seconds(decoder, chunks, group) -> float:
    """One eager forward: CUDA events around it on GPUs (the device's time from its first kernel to its
    last, launch gaps included), the wall clock on CPUs."""
    device = decoder.device
    if device.type != "cuda":
        t0 = time.perf_counter()
        decoder.forward(chunks, group)
        return time.perf_counter() - t0
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    decoder.forward(chunks, group)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def _observe(run, device, observed: dict) -> None:
    """`observed` receives, for one more call of `run`, the device seconds per kernel category
    ("measured_kernels_by_kind_s", observe.kernel_breakdown) and the kernels' summary ("measured_kernels":
    count, span, idle time, top kernels; observe.kernel_summary): a check row's fields."""
    from profiles.profiler.observe import kernel_breakdown, kernel_events, kernel_summary
    try:
        events = kernel_events(run, device)
        observed["measured_kernels_by_kind_s"] = kernel_breakdown(events)
        observed["measured_kernels"] = kernel_summary(events)
    except Exception as exc:  # noqa: BLE001 — diagnostics never fail a check; the error is recorded
        observed["measured_kernels_by_kind_s"] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}


def _graph_seconds(decoder, group, reps: int, observed: dict | None = None) -> float:
    device = decoder.device
    q = int(group.ids.shape[1])
    ids = group.ids.reshape(-1).to(device)
    positions = (torch.tensor(list(group.cached))[:, None] + torch.arange(q)[None, :]).reshape(-1).to(device)

    def step():
        return decoder.kernels.sample_tokens(decoder.logits_on_device(ids, positions, [], group, None))

    graph = capture_graph(step, device, warmup=2)
    samples = [replay_seconds(graph) for _ in range(reps)]
    if observed is not None:
        _observe(graph.replay, device, observed)
    del graph
    return statistics.median(samples)


def run_check(profile_dir: str | Path, device: str, models: Sequence[str], dtype: str, threads: int,
              shapes: Sequence[CheckShape] = SHAPES, reps: int = 10, seed: int = 0, log=print,
              out_file: str | Path | None = None, kernels=None, latency=None) -> dict:
    """Measure every shape, price it from the profile and return {shapes: [...], max_abs_error, passed,
    ...}; written as JSON to `out_file` when given. `kernels`: the model's kernel set (default: the
    device's, as the profile was made); `latency`: the profile already loaded (`load_profile`; default:
    loaded here)."""
    from models.torch_impl.fused import FusedDecoder, config_from_spec
    from profiles.predictor import ProfiledLatencyModel
    from profiles.profiler.run import TORCH_DTYPES
    torch.set_num_threads(threads)
    dev = torch.device(device)
    latency = latency if latency is not None else ProfiledLatencyModel(profile_dir)
    target, drafter = check_models(models)
    rows = []
    load_start = [round(x, 2) for x in os.getloadavg()]
    for role, spec in ((TARGET, target), (DRAFTER, drafter)):
        mine = [s for s in shapes if s.model == role]
        if not mine or spec is None:
            continue
        longest = max(s.ctx + s.q if not s.prefill else s.prefill for s in mine) + 16
        decoder = FusedDecoder.random(config_from_spec(spec, max_context=longest), seed, TORCH_DTYPES[dtype], dev,
                                      kernels=kernels)
        with torch.inference_mode():
            for shape in mine:
                t0 = time.perf_counter()
                observed: dict = {"measured_kernels_by_kind_s": {}}
                measured = measure_seconds(decoder, spec, shape, reps, seed, observed if dev.type == "cuda" else None)
                predicted, by_kind = predicted_breakdown(latency, spec, shape, dtype)
                error = predicted / measured - 1.0
                rows.append({**asdict(shape), "model_name": spec.name, "measured_s": measured,
                             "predicted_s": predicted, "error": error, "predicted_by_kind_s": by_kind, **observed})
                log(f"check {shape.name:<26} {spec.name:<20} measured {measured * 1e3:9.3f} ms  "
                    f"profile {predicted * 1e3:9.3f} ms  error {error * 100:+6.1f} %  "
                    f"({time.perf_counter() - t0:.1f} s)")
        del decoder
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    worst = max((abs(r["error"]) for r in rows), default=0.0)
    result = {"profile_dir": str(profile_dir), "device": device, "dtype": dtype, "threads": threads,
              "reps": reps, "tolerance": TOLERANCE, "max_abs_error": worst, "passed": worst <= TOLERANCE,
              "timing": "cuda graph replay (decode/verify), events (prefill)" if dev.type == "cuda" else
              "wall clock of whole forwards", "load_average_at_start": load_start,
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "shapes": rows}
    if out_file is not None:
        ready_to_write(out_file).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result
