"""Suffix decoding vs n-gram prompt lookup on real multi-turn sessions: walks, figures and the shipped
walk files.

    python3 -m scenarios.acceptance.suffix_acceptance [--corpus NAME ...]

For each shipped session corpus (profiles/data/acceptance/sessions/*.parquet) and each drafter below, runs
the drafter's greedy speculative walk through every request (simulator.speculation.suffix.walk), writes
the walks next to the corpus (`<corpus>.walks.parquet`: one row per request and drafter, keyed by the
drafter's settings and the corpus fingerprint; what scenarios with these settings replay) and the figures
(`<corpus>.summary.json`: per workload, mean accepted length per step, proposal rate, tokens per step,
the tail P(τ ≥ k) and the histogram of accepted lengths).

Drafters: suffix decoding with vLLM's defaults (γ = max_tree_depth = 24, 10000 cached requests, factor 1,
min_token_prob 0.1), the same without the global tree (max_cached_requests 0: prompt and own output only),
and n-gram prompt lookup (vLLM's proposer, n ≤ 3) with γ = 4 and γ = 8.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from models.errors import doc_description, run_script, script_args

DRAFTERS = {
    "suffix": {"kind": "suffix"},
    "suffix_no_global": {"kind": "suffix", "max_cached_requests": 0},
    # lookups 3 to 1, as the shipped walks and the README's table were computed (vLLM's own default is 5 and 5)
    "ngram_g4": {"kind": "ngram", "gamma": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
    "ngram_g8": {"kind": "ngram", "gamma": 8, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
}


def drafter_section(spec: dict):
    from simulator.config.speculation import NgramDrafterConfig, SuffixDrafterConfig
    return (SuffixDrafterConfig if spec["kind"] == "suffix" else NgramDrafterConfig)(**spec)


def compute(corpus: Path) -> tuple[pd.DataFrame, dict]:
    from profiles.acceptance.sessions import fingerprint, load_sessions
    from simulator.speculation.suffix.acceptance import drafter_key
    from simulator.speculation.suffix.cache import SuffixParams
    from simulator.speculation.suffix.walk import ngram_walks, suffix_walks, summarize
    frame = load_sessions(corpus)
    fp = fingerprint(frame)
    rows, summary = [], {"corpus": corpus.stem, "fingerprint": fp, "requests": len(frame),
                         "output_tokens": int(frame["output_tokens"].map(len).sum()), "drafters": {}}
    for name, spec in DRAFTERS.items():
        d = drafter_section(spec)
        key = drafter_key(d)
        t0 = time.perf_counter()
        walks = suffix_walks(frame, SuffixParams(*key[1:])) if key[0] == "suffix" else ngram_walks(frame, *key[1:])
        seconds = time.perf_counter() - t0
        for i, (p, a, w) in enumerate(zip(walks.proposed, walks.accepted, walks.workloads)):
            rows.append({"drafter": json.dumps(list(key)), "corpus_fingerprint": fp, "row": i, "workload": w,
                         "proposed": p.astype(np.int32), "accepted": a.astype(np.int32)})
        # (the walk's seconds are printed, not stored: the shipped files a re-run rewrites stay byte for byte
        # what they were, and a README command leaves a checkout unmodified)
        entry = {"settings": spec, "all": summarize(walks)}
        for w in sorted(set(walks.workloads)):
            entry[w] = summarize(walks, w)
            _, acc = walks.steps(w)
            entry[w]["histogram"] = np.bincount(acc).tolist()
        summary["drafters"][name] = entry
        print(f"{corpus.stem} {name}: {entry['all']} ({seconds:.0f} s)", file=sys.stderr, flush=True)
    return pd.DataFrame(rows), summary


def main(argv: list[str] | None = None) -> int:
    from simulator.speculation.suffix.acceptance import SHIPPED_CORPORA, shipped_walks_path
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    shipped = sorted(p for p in SHIPPED_CORPORA.glob("*.parquet") if not p.name.endswith(".walks.parquet"))
    parser.add_argument("--corpus", nargs="*", default=None, choices=[p.stem for p in shipped],
                        help="shipped session corpora to walk (default: all)")
    args = script_args(parser, argv)
    corpora = [SHIPPED_CORPORA / f"{c}.parquet" for c in args.corpus] if args.corpus else shipped
    for corpus in corpora:
        walks, summary = compute(corpus)
        walks.to_parquet(shipped_walks_path(corpus), index=False, compression="zstd")
        corpus.with_name(corpus.stem + ".summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
