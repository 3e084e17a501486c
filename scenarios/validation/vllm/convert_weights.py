#!/usr/bin/env python3
"""Turn a pinned GGUF file into the Hugging Face folder vLLM loads (vLLM 0.32 has no GGUF loader).

Runs in the vLLM virtualenv (it needs `transformers`, `gguf`, `accelerate`; it imports nothing from
draftsim so that the draftsim environment does not need them). transformers' GGUF loader dequantizes the
Q4_K_M tensors to float32; `save_pretrained` writes them as safetensors together with the tokenizer.

Approximation named here: the weights vLLM runs are the *dequantized* Q4_K_M values in fp32, the same
numbers draftsim's torch implementation and its acceptance measurement use (models/torch_impl dequantizes
the same file), so vLLM's acceptance and draftsim's measured trace come from identical weights.

Usage (vLLM venv):  python convert_weights.py GGUF_FILE OUT_DIR
Takes ~2 min / 4 GB peak for the 0.5B model, ~3 min / 9 GB for the 1.5B on 2 cores.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def convert(gguf_path: Path, out_dir: Path) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The loaded model still carries the GGUF quantizer that produced it; save_pretrained refuses to
    # serialize a "quantized" model, although every tensor is already a plain float32 tensor.
    model.hf_quantizer = None
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    for attr in ("is_quantized", "quantization_method"):
        if hasattr(model, attr):
            try:
                delattr(model, attr)
            except AttributeError:
                pass
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    record = {"gguf": str(gguf_path), "gguf_bytes": gguf_path.stat().st_size,
              "dtype": "float32", "seconds": round(time.perf_counter() - start, 1),
              "parameters": sum(p.numel() for p in model.parameters())}
    (out_dir / "draftsim_conversion.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: convert_weights.py GGUF_FILE OUT_DIR", file=sys.stderr)
        return 2
    gguf_path, out_dir = Path(argv[0]), Path(argv[1])
    if not gguf_path.is_file():
        print(f"convert_weights: GGUF file {gguf_path} does not exist", file=sys.stderr)
        return 2
    print(json.dumps(convert(gguf_path, out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
