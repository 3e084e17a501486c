"""The cases of `draftsim validate --engine vllm`: what vLLM runs and what the simulator is told.

Every case runs vLLM V1 in fp32 on the machine's CPU with the engine configuration `ENGINE` (vLLM's
defaults on CPU except the token budget, which is `vllm serve`'s 2048), on a workload of held-out code
prompts with Poisson arrivals (scenarios/validation/vllm/workload.py). Speculative cases share their
plain baseline's workload, so the simulator's speedup (or slow-down) is checked against the engine's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DATA_DIR = REPO / "profiles" / "data" / "vllm_validation" / "amd-epyc"
PROFILE_DIR = REPO / "profiles" / "data" / "engine_profile" / "vllm-0.32.0-cpu--amd-epyc"
ACCEPTANCE_TRACE = "qwen2.5-coder-1.5b-0.5b"

# vLLM engine arguments of every case (and the simulator's scheduler mirrors them)
ENGINE = {"max_num_seqs": 256, "max_num_batched_tokens": 2048, "block_size": 128, "kv_cache_gib": 2.0,
          "threads": 2, "max_model_len": 4096}


@dataclass(frozen=True)
class EngineCase:
    name: str
    target: str                  # catalog name = HF folder name under --models-dir
    workload: str                # file under <data>/workloads/
    description: str
    draft: str | None = None     # draft model (catalog name)
    ngram: int = 0               # vLLM prompt_lookup_max; 0: no n-gram speculation
    spec_tokens: int = 0
    baseline: str | None = None  # the plain case on the same workload

    @property
    def speculative(self) -> bool:
        return self.spec_tokens > 0

    def driver_args(self, models_dir: Path) -> list[str]:
        args = ["--model", str(models_dir / self.target), "--threads", str(ENGINE["threads"]),
                "--max-num-seqs", str(ENGINE["max_num_seqs"]), "--max-num-batched-tokens",
                str(ENGINE["max_num_batched_tokens"]), "--block-size", str(ENGINE["block_size"]),
                "--max-model-len", str(ENGINE["max_model_len"])]
        if self.draft:
            args += ["--draft", str(models_dir / self.draft), "--spec-tokens", str(self.spec_tokens)]
        elif self.ngram:
            args += ["--ngram", str(self.ngram), "--spec-tokens", str(self.spec_tokens)]
        return args

    def model_dirs(self, models_dir: Path) -> list[Path]:
        return [models_dir / m for m in (self.target, self.draft) if m]

    def speculation_sections(self) -> dict:
        """The scenario's drafter and acceptance sections: acceptance from the measured trace of the same
        weights on other prompts (profiles/data/acceptance), greedy, as vLLM runs here (temperature 0)."""
        if self.draft:
            return {"drafter": {"kind": "draft_model", "model": self.draft, "gamma": self.spec_tokens,
                                "passes": "vllm"},
                    "acceptance": {"kind": "trace", "trace": ACCEPTANCE_TRACE, "drafter": "draft", "mode": "greedy"}}
        if self.ngram:
            return {"drafter": {"kind": "ngram", "gamma": self.spec_tokens},
                    "acceptance": {"kind": "trace", "trace": ACCEPTANCE_TRACE, "drafter": "ngram", "mode": "greedy"},
                    "policy": {"kind": "proposed"}}
        return {"drafter": {"kind": "none"}}


CASES = {c.name: c for c in (
    EngineCase("qwen-0.5b", "qwen2.5-coder-0.5b", "code-0.5b.json", "Qwen2.5-Coder-0.5B, plain decoding"),
    EngineCase("qwen-1.5b", "qwen2.5-coder-1.5b", "code-1.5b.json", "Qwen2.5-Coder-1.5B, plain decoding"),
    EngineCase("qwen-1.5b+draft", "qwen2.5-coder-1.5b", "code-1.5b.json",
               "Qwen2.5-Coder-1.5B verified, 0.5B draft model, 4 draft tokens", draft="qwen2.5-coder-0.5b",
               spec_tokens=4, baseline="qwen-1.5b"),
    # n-gram acceptance depends on the target's own text: the measured trace's n-gram columns are the
    # 1.5B target's, so the n-gram case speculates for the 1.5B
    EngineCase("qwen-1.5b+ngram", "qwen2.5-coder-1.5b", "code-1.5b.json",
               "Qwen2.5-Coder-1.5B with n-gram prompt lookup (n ≤ 3), 4 draft tokens", ngram=3, spec_tokens=4,
               baseline="qwen-1.5b"),
)}
