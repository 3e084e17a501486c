"""Host time of draftsim's suffix-decoding implementation (simulator.speculation.suffix): per-token tree
update and per-request lookup, timed while the proposer walks a shipped session corpus.

    python3 -m scenarios.benchmarks.suffix_host_time [--corpus sessions-sharegpt] [--repeats 3]

Times, over the walk of every request (vLLM's per-step calls, simulator.speculation.suffix.walk):
`start` (building the request's prompt tree, per prompt token), `add_active_response` (per emitted
token: local and global trees) and `speculate` (per call: both trees, all match lengths). Prints the
median over repeats of each per-unit time (microseconds) and the tree sizes. Single-threaded pure Python
(no torch): an upper bound for the engine, whose ArcticInference trees are C++ (path-compressed, with a
custom hash map and a two-level sibling list; Snowflake reports 3.4x faster speculation and 1.5x faster
updates from those alone). Run it on an idle machine for figures to publish.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from models.errors import bounded, doc_description, run_script, script_args
from simulator.speculation.suffix.cache import SuffixParams, SuffixProposer


class TimedProposer(SuffixProposer):
    def __init__(self, params):
        super().__init__(params)
        self.t = {"prompt_s": 0.0, "prompt_tokens": 0, "update_s": 0.0, "update_tokens": 0, "lookup_s": 0.0, "lookups": 0}

    def start(self, req, prompt, first_tokens):
        t0 = time.perf_counter()
        self.cache.start_request(req, prompt)
        self.t["prompt_s"] += time.perf_counter() - t0
        self.t["prompt_tokens"] += len(prompt)
        self.context[req] = list(prompt)
        return self.propose(req, first_tokens)

    def propose(self, req, sampled):
        sampled = [int(t) for t in sampled]
        t0 = time.perf_counter()
        self.cache.add_active_response(req, sampled)
        t1 = time.perf_counter()
        ctx = self.context[req]
        ctx.extend(sampled)
        p = self.params
        draft = self.cache.speculate(req, ctx[-p.max_tree_depth:], p.num_speculative_tokens, p.max_spec_factor,
                                     p.max_spec_offset, p.min_token_prob)
        t2 = time.perf_counter()
        self.t["update_s"] += t1 - t0
        self.t["update_tokens"] += len(sampled)
        self.t["lookup_s"] += t2 - t1
        self.t["lookups"] += 1
        return draft


def measure(corpus: str) -> dict:
    import gc
    from pathlib import Path
    from profiles.acceptance.sessions import load_sessions
    from simulator.speculation.suffix import walk
    from simulator.speculation.suffix.acceptance import resolve_corpus
    frame = load_sessions(resolve_corpus(corpus, Path(".")))
    original = walk.SuffixProposer
    holder = {}

    class Capture(TimedProposer):
        def __init__(self, params):
            super().__init__(params)
            holder["p"] = self
    walk.SuffixProposer = Capture
    gc.disable()
    try:
        walk._suffix_walks(frame, SuffixParams())
    finally:
        walk.SuffixProposer = original
        gc.enable()
    p = holder["p"]
    t = p.t
    return {"prompt_us_per_token": 1e6 * t["prompt_s"] / t["prompt_tokens"],
            "update_us_per_token": 1e6 * t["update_s"] / t["update_tokens"],
            "lookup_us_per_call": 1e6 * t["lookup_s"] / t["lookups"],
            "lookups": t["lookups"], "global_tree_nodes": p.cache.global_tree.num_nodes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc_description(__doc__))
    parser.add_argument("--corpus", default="sessions-sharegpt")
    parser.add_argument("--repeats", type=bounded(), default=3)
    args = script_args(parser, argv)
    runs = [measure(args.corpus) for _ in range(args.repeats)]
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out.update(corpus=args.corpus, repeats=args.repeats, python=platform.python_version(),
               machine=platform.processor() or platform.machine(), threads=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
