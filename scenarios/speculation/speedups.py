"""The table of scenarios/speculation/README.md: for each shipped speculation scenario, tokens per step,
mean TPOT with the drafter and without it ("plain": the same scenario with `drafter: {kind: none}`),
the speedup and the KV capacity relative to plain, priced with the scenario's latency block (the
defaults: measured kernels and the engine's per-step time where available).

    python3 -m scenarios.speculation.speedups [--set KEY=VALUE ...]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from models.errors import doc_description, run_script, script_args
import simulator

FOLDER = Path(__file__).resolve().parent
SCENARIOS = ("colocated_draft", "separate_draft", "cpu_draft", "medusa_heads", "eagle_dynamic_tree", "layer_skip",
             "ngram", "multidraft", "sequoia_tree", "smartspec_policy", "multidraft_optimal",
             "context_dynamic_tree", "cascade_drafting", "hydra_heads", "clover_heads", "koala_heads",
             "falcon_semi_ar", "magicdec_long_context", "triforce_hierarchy",
             "online_drift", "batch_realign", "specreason", "easyspec_layer_parallel", "ouroboros_phrases",
             "thompson_gamma", "pearl", "ouroboros_reuse", "rasd_retrieval")


def row(name: str, overrides: list[str]) -> dict:
    from simulator.config.scenario import apply_overrides, read_scenario_dict
    path = FOLDER / f"{name}.yaml"
    data = apply_overrides(read_scenario_dict(path), overrides + ["outputs.plots=false"])
    data.setdefault("name", name)
    spec = simulator.run(data, base_dir=FOLDER)
    plain_data = {k: v for k, v in data.items() if k not in ("drafter", "speculation", "policy")}
    plain = simulator.run({**plain_data, "drafter": {"kind": "none"}}, base_dir=FOLDER)
    s, p = spec.summary, plain.summary
    return {"scenario": name, "tokens_per_step": s["tokens_per_step"], "tpot_ms": 1e3 * s["tpot_mean_s"],
            "plain_tpot_ms": 1e3 * p["tpot_mean_s"], "speedup": p["tpot_mean_s"] / s["tpot_mean_s"],
            "kv_vs_plain": s["kv_tokens_per_replica"] / p["kv_tokens_per_replica"],
            "latency": s["latency_source"]["source"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=doc_description(__doc__))
    ap.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run (default: all of SCENARIOS)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override every scenario")
    args = script_args(ap, argv)
    print("| scenario | tokens / step | TPOT (ms) | plain TPOT (ms) | speedup | KV capacity vs plain | kernels |")
    print("|---|---|---|---|---|---|---|")
    for name in args.names or SCENARIOS:
        r = row(name, args.set)
        print(f"| {r['scenario']} | {r['tokens_per_step']:.2f} | {r['tpot_ms']:.3g} | {r['plain_tpot_ms']:.3g} | "
              f"{r['speedup']:.2f}× | {r['kv_vs_plain']:.3f} | {r['latency']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
