"""Acceptance of a model-free drafter (suffix decoding, n-gram prompt lookup) from running the drafter on
a real session corpus: `acceptance: {kind: sessions, corpus: NAME}` with `drafter: {kind: suffix | ngram}`.

The drafter's settings (the drafter section) decide its walks through the corpus
(simulator.speculation.suffix.walk); the result is a trace acceptance model
(simulator.speculation.trace_acceptance.TraceChainAcceptance) whose per-step accepted lengths AND
proposal lengths follow the walk of the corpus request assigned to each simulated request (a seeded hash
of the request id; the walk wraps around when a simulated request outlives its text, as for measured
traces). A suffix drafter's verify pass is therefore ragged — each request verifies the tokens it was
proposed this step, 0 when nothing matched — priced by the `proposed` control policy's mixed-count
pricing (simulator.speculation.control.base): `bind_proposer` makes `proposed` the suffix drafter's
policy. The walks run over the whole corpus (the engine served all of it, so its global tree holds every
workload's outputs); `workloads` only chooses which corpus requests simulated requests replay. Walks for
the shipped scenarios' settings are shipped next to the corpus (`<corpus>.walks.parquet`, keyed by the
drafter's settings and the corpus fingerprint); others are computed once per process.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from simulator.errors import ScenarioError
from simulator.speculation.trace_acceptance import resolve_data_file

SHIPPED_CORPORA = Path(__file__).resolve().parents[3] / "profiles" / "data" / "acceptance" / "sessions"
MODEL_FREE = ("suffix", "ngram")


@dataclass(frozen=True)
class BoundSessions:
    """A `sessions` acceptance section bound to the drafter section that runs on its texts."""

    section: object
    drafter: object
    kind: str = "sessions"
    engine: tuple = ("vllm", None)     # (framework, version) of the deployment: whose proposer walks the texts


@dataclass(frozen=True)
class _Proposed:
    """The `proposed` policy section (simulator.config.speculation.ProposedPolicyConfig has no other field)."""

    kind: str = "proposed"


PROPOSED = _Proposed()


def bind_proposer(acceptance, policy, drafter):
    """(acceptance, policy) for the replica factory: a `sessions` section is bound to its drafter; a suffix
    drafter verifies what it proposes (`proposed` policy; `fixed` means the engine's own rule). One-line
    errors for combinations that have no meaning."""
    if drafter.kind == "suffix":
        if acceptance.kind != "sessions":
            raise ScenarioError("acceptance.kind", "drafter suffix proposes from the texts it has seen: its "
                                "acceptance comes from running it on a session corpus (acceptance kind 'sessions')")
        if policy.kind not in ("fixed", "proposed"):
            raise ScenarioError("policy.kind", f"drafter suffix chooses its own draft length per request and step "
                                f"(vLLM's SuffixDecodingProposer); policy {policy.kind!r} cannot set it: use 'fixed'")
        policy = PROPOSED
    if acceptance.kind == "sessions":
        if drafter.kind not in MODEL_FREE:
            raise ScenarioError("acceptance.kind", f"'sessions' runs a model-free drafter on the corpus texts: it "
                                f"needs drafter kind suffix or ngram (got {drafter.kind!r})")
        acceptance = BoundSessions(acceptance, drafter)
    return acceptance, policy


def bind_engine(acceptance, drafter, release: tuple, policy=None):
    """The acceptance of an n-gram drafter on the deployment's engine (`release`: (framework, version)). The
    walks of vLLM's prompt lookup (acceptance trace with drafter ngram, profiles.acceptance.drafters.ngram_propose;
    or `sessions`) are vLLM's proposer only: on SGLang `sessions` runs SGLang's own NGRAM trie
    (simulator.speculation.suffix.sglang_ngram, 0.5.10 on); everything else is refused in one line rather than
    run as vLLM's lookup under another engine's name. With `policy` proposed the engine rule refuses that policy
    first (profiles.engine_time.support, naming policy.kind)."""
    framework, version = release
    if getattr(drafter, "kind", None) == "ngram":
        check_sglang_flags(drafter, release)
    if getattr(drafter, "kind", None) != "ngram" or framework == "vllm" or getattr(policy, "kind", None) == "proposed":
        return acceptance
    kind = getattr(acceptance, "kind", None)
    if kind == "trace" and acceptance.drafter == "ngram":
        allowed = ("acceptance kind sessions (SGLang's own NGRAM trie run on the corpus texts, 0.5.10 on)"
                   if framework == "sglang" else "an acceptance that states alpha (constant or positional)")
        raise ScenarioError("acceptance.drafter", f"the trace's n-gram walks are vLLM's prompt lookup, not "
                            f"{_NGRAM_NAMES[framework]}; allowed: {allowed}")
    if kind != "sessions":
        return acceptance
    if framework == "trtllm":
        raise ScenarioError("acceptance.kind", f"'sessions' runs vLLM's or SGLang's n-gram proposer; "
                            f"{_NGRAM_NAMES['trtllm']} is not modelled; allowed: an acceptance that states alpha "
                            "(constant or positional), or cluster.engine.framework vllm or sglang")
    from profiles.measured.source import version_before
    if version is not None and version_before(version, SGLANG_TRIE_FROM):
        raise ScenarioError("cluster.engine.version", f"sglang {version}'s NGRAM (0.5.3 to 0.5.9, cpp_ngram/"
                            "ngram.cpp) inserts windows on a background thread (Ngram::asyncInsert; synchronize() "
                            "waits for the queue to empty, not for the window last dequeued to be applied), so what a "
                            "draft sees depends on thread timing and cannot be replayed; allowed: a version >= "
                            f"{SGLANG_TRIE_FROM} with acceptance kind sessions")
    given = sorted({"prompt_lookup_max", "prompt_lookup_min"} & set(drafter.model_fields_set))   # as written
    if given:
        also = "".join(f" (as is drafter.{name})" for name in given[1:])
        raise ScenarioError(f"drafter.{given[0]}", f"is vLLM's lookup window{also}; SGLang's NGRAM matches every "
                            "suffix of up to --speculative-ngram-max-trie-depth (drafter.max_trie_depth) tokens: "
                            f"leave {'them' if also else 'it'} out")
    import dataclasses
    return dataclasses.replace(acceptance, engine=(framework, version))


# drafter field -> (SGLang's flag, the first release that has it). Read 2026-11-29 in the PyPI wheels'
# srt/server_args.py (ServerArgs; arg_groups/fields/spec.py in 0.5.23): 0.5.2 has no NGRAM flags; 0.5.3 - 0.5.9 have
# the breadths, match type and capacity beside --speculative-ngram-min/max-match-window-size and
# --speculative-ngram-branch-length (not modelled); 0.5.10 - 0.5.23 replace those three with
# --speculative-ngram-max-trie-depth (and 0.5.13 on add the external-corpus flags, not modelled). Defaults are the
# same in every release that has the flag (simulator.config.speculation.NgramDrafterConfig).
SGLANG_NGRAM_FLAGS = {"max_trie_depth": ("--speculative-ngram-max-trie-depth", "0.5.10"),
                      "min_bfs_breadth": ("--speculative-ngram-min-bfs-breadth", "0.5.3"),
                      "max_bfs_breadth": ("--speculative-ngram-max-bfs-breadth", "0.5.3"),
                      "match_type": ("--speculative-ngram-match-type", "0.5.3"),
                      "capacity_nodes": ("--speculative-ngram-capacity", "0.5.3")}


def check_sglang_flags(drafter, release: tuple) -> None:
    """ScenarioError (one line) for an SGLang NGRAM setting written for a deployment whose engine has no such flag:
    another framework, or an SGLang release before the flag (SGLANG_NGRAM_FLAGS). No release named: SGLang's
    latest flags."""
    from profiles.measured.source import version_before
    framework, version = release
    for name in sorted(set(SGLANG_NGRAM_FLAGS) & set(drafter.model_fields_set)):   # as written
        flag, since = SGLANG_NGRAM_FLAGS[name]
        if framework != "sglang":
            raise ScenarioError(f"drafter.{name}", f"is SGLang's {flag} (its NGRAM trie); {framework} has no such "
                                "setting: leave it out, or set cluster.engine.framework sglang")
        if version is not None and version_before(version, since):
            raise ScenarioError(f"drafter.{name}", f"sglang {version} has no {flag} (from {since}); leave it out "
                                f"or set cluster.engine.version >= {since}")


_NGRAM_NAMES = {"sglang": "SGLang's NGRAM trie (speculative/ngram_worker.py, a BFS draft tree over recent windows "
                          "of every request)",
                "trtllm": "TensorRT-LLM's NGram drafter (_torch/speculative/ngram.py NGramPoolManager: pattern -> "
                          "match pool, shared across requests by default, is_public_pool)"}


def resolve_corpus(name_or_path: str, base_dir: Path) -> Path:
    """A path relative to the scenario, an absolute path, or the name of a shipped session corpus."""
    return resolve_data_file(name_or_path, base_dir, SHIPPED_CORPORA, "acceptance.corpus", "session corpus")


def suffix_params(d):
    from simulator.speculation.suffix.cache import SuffixParams
    return SuffixParams(num_speculative_tokens=d.gamma, max_tree_depth=d.max_tree_depth,
                        max_cached_requests=d.max_cached_requests, max_spec_factor=d.max_spec_factor,
                        max_spec_offset=d.max_spec_offset, min_token_prob=d.min_token_prob)


def shipped_walks_path(corpus: Path) -> Path:
    return corpus.with_name(corpus.stem + ".walks.parquet")


def read_shipped_walks(corpus: Path, key: tuple, fingerprint: str):
    """The walks shipped next to `corpus` for drafter `key` (scenarios/acceptance/suffix_acceptance.py wrote
    them from this corpus, checked by its fingerprint), or None."""
    import json
    import pandas as pd
    path = shipped_walks_path(corpus)
    if not path.is_file():
        return None
    table = pd.read_parquet(path)
    rows = table[(table["drafter"] == json.dumps(list(key))) & (table["corpus_fingerprint"] == fingerprint)]
    if not len(rows):
        return None
    rows = rows.sort_values("row")
    from simulator.speculation.suffix.walk import Walks
    return Walks(tuple(np.asarray(p, np.int64) for p in rows["proposed"]),
                 tuple(np.asarray(a, np.int64) for a in rows["accepted"]), tuple(rows["workload"].astype(str)))


@lru_cache(maxsize=16)
def corpus_walks(path: str, drafter_key: tuple):
    """Walks of a whole corpus under a drafter: the shipped ones when they exist for this drafter and
    corpus, else computed (seconds for n-gram, minutes for suffix decoding on ~20k tokens; cached per
    process)."""
    from profiles.acceptance.sessions import fingerprint, load_sessions
    frame = load_sessions(path)
    shipped = read_shipped_walks(Path(path), drafter_key, frame.attrs["meta"].get("fingerprint") or fingerprint(frame))
    if shipped is not None:
        return shipped
    return WALKERS[drafter_key[0]](frame, *drafter_key[1:])


def _suffix(frame, *settings):
    from simulator.speculation.suffix.cache import SuffixParams
    from simulator.speculation.suffix.walk import suffix_walks
    return suffix_walks(frame, SuffixParams(*settings))


def _vllm_ngram(frame, gamma, max_n, min_n):
    from simulator.speculation.suffix.walk import ngram_walks
    return ngram_walks(frame, gamma, max_n, min_n)


def _sglang_ngram(frame, *settings):
    from simulator.speculation.suffix.sglang_ngram import SglangNgramParams, sglang_ngram_walks
    return sglang_ngram_walks(frame, SglangNgramParams(*settings))


def _sglang_ngram_prob(frame, *settings):
    from simulator.speculation.suffix.sglang_ngram import SglangNgramParams, sglang_ngram_walks
    return sglang_ngram_walks(frame, SglangNgramParams(*settings, match_type="PROB"))


# proposer (the first item of drafter_key) -> its walks over a session corpus
WALKERS = {"suffix": _suffix, "ngram": _vllm_ngram, "sglang_ngram": _sglang_ngram,
           "sglang_ngram_prob": _sglang_ngram_prob}
SGLANG_TRIE_FROM = "0.5.10"      # the trie-depth NGRAM (--speculative-ngram-max-trie-depth); 0.5.3-0.5.9 matched windows
SGLANG_INSERT_LAGS_FROM = "0.5.14"


def drafter_key(d, engine: tuple = ("vllm", None)) -> tuple:
    """The proposer and its settings: vLLM's suffix decoding or prompt lookup, or SGLang's NGRAM trie on an SGLang
    deployment (the budget is speculative_num_draft_tokens - 1 = drafter.gamma; match type PROB is its own
    proposer name, so that a BFS key is what it was before the match type could be set and the shipped walks
    still match it)."""
    if d.kind == "suffix":
        p = suffix_params(d)
        return ("suffix", p.num_speculative_tokens, p.max_tree_depth, p.max_cached_requests, p.max_spec_factor,
                p.max_spec_offset, p.min_token_prob)
    if engine[0] == "sglang":
        from profiles.measured.source import version_key
        from simulator.speculation.suffix.sglang_ngram import SglangNgramParams
        p = SglangNgramParams(d.gamma, d.max_trie_depth, d.min_bfs_breadth, d.max_bfs_breadth, d.capacity_nodes)
        lags = engine[1] is None or version_key(engine[1]) >= version_key(SGLANG_INSERT_LAGS_FROM)
        return ("sglang_ngram" if d.match_type == "BFS" else "sglang_ngram_prob", p.draft_budget, p.max_trie_depth,
                p.min_bfs_breadth, p.max_bfs_breadth, p.capacity, lags)
    return ("ngram", d.gamma, d.prompt_lookup_max, d.prompt_lookup_min)


def sessions_chain(bound: BoundSessions, gamma: int, seed: int, base_dir: Path):
    """The TraceChainAcceptance of a bound `sessions` section (module docstring)."""
    from simulator.speculation.trace_acceptance import TraceChainAcceptance
    sec = bound.section
    path = resolve_corpus(sec.corpus, base_dir)
    try:
        walks = corpus_walks(str(path), drafter_key(bound.drafter, bound.engine))
    except ValueError as exc:
        raise ScenarioError("acceptance.corpus", f"{path}: {exc}") from None
    workloads = set(sec.workloads) if sec.workloads else None
    if workloads is not None and workloads - set(walks.workloads):   # (the config cannot know the corpus's names)
        raise ScenarioError("acceptance.workloads", f"{path.name} holds workloads {sorted(set(walks.workloads))}; "
                                                    f"not {sorted(workloads - set(walks.workloads))}")
    keep = [i for i, a in enumerate(walks.accepted) if len(a) and (workloads is None or walks.workloads[i] in workloads)]
    if not keep:
        if workloads is None:   # (named acceptance.workloads, a field not given, as 'no request of []')
            raise ScenarioError("acceptance.corpus", f"{path}: no request has a decode step (an output of 2 "
                                                     "tokens or more)")
        raise ScenarioError("acceptance.workloads", f"{path.name}: no request of {sorted(workloads)} has a "
                                                    "decode step")
    accepted = [np.minimum(walks.accepted[i], gamma) for i in keep]
    proposed = [np.minimum(walks.proposed[i], gamma) for i in keep]
    lengths = np.array([len(a) for a in accepted], dtype=np.int64)
    return TraceChainAcceptance(gamma, seed, np.concatenate(accepted), np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64),
                                lengths, np.concatenate(proposed))
