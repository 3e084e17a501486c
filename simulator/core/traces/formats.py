"""The public trace formats draftsim reads (registry `FORMATS`, one entry per format; a new format is one
`TraceFormat` and one line in the registry).

| format | file | arrival | prompt tokens | output tokens | prefix blocks |
|---|---|---|---|---|---|
| `draftsim` | CSV | `arrival_s` (seconds) | `prompt_tokens` | `output_tokens` | — |
| `azure` | CSV | `TIMESTAMP` (date and time) | `ContextTokens` | `GeneratedTokens` | — |
| `burstgpt` | CSV | `Timestamp` (seconds) | `Request tokens` | `Response tokens` | — |
| `mooncake` | JSONL | `timestamp` (milliseconds) | `input_length` | `output_length` | `hash_ids`, 512 tokens each |

Sources of the layouts: Azure LLM inference traces 2023/2024 (github.com/Azure/AzurePublicDataset,
`AzureLLMInferenceTrace_{code,conv}.csv`: `TIMESTAMP,ContextTokens,GeneratedTokens`, timestamps with
100 ns digits); BurstGPT (github.com/HPMLL/BurstGPT, `BurstGPT_1.csv`:
`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`, seconds from the start of the
log; failed requests are logged with 0 response tokens and are skipped here, `skip_zero_tokens`);
Mooncake (github.com/kvcache-ai/Mooncake, FAST'25 traces: one JSON object per line, `timestamp` in ms
since the first request, `hash_ids` = one id per 512-token block of the prompt, equal ids = equal
prefixes, the last id covering the partial block).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceFormat:
    name: str
    file_kind: str                 # "csv" | "jsonl"
    arrival: str
    prompt_tokens: str
    output_tokens: str
    time_unit: str                 # "s" | "ms" | "us" | "datetime"
    hash_ids: str | None = None
    hash_block_tokens: int = 0     # tokens per hash id (0: no hash ids)
    skip_zero_tokens: bool = False # rows with 0 prompt or output tokens are skipped (failed requests)

    def columns(self) -> dict[str, str | None]:
        return {"arrival": self.arrival, "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
                "hash_ids": self.hash_ids}


FORMATS: dict[str, TraceFormat] = {f.name: f for f in (
    TraceFormat("draftsim", "csv", "arrival_s", "prompt_tokens", "output_tokens", "s"),
    TraceFormat("azure", "csv", "TIMESTAMP", "ContextTokens", "GeneratedTokens", "datetime"),
    TraceFormat("burstgpt", "csv", "Timestamp", "Request tokens", "Response tokens", "s", skip_zero_tokens=True),
    TraceFormat("mooncake", "jsonl", "timestamp", "input_length", "output_length", "ms", "hash_ids", 512),
)}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
JSON_LINES_SUFFIXES = (".jsonl", ".json")   # a file of these is JSON lines whatever its format (simulator.core.traces)
