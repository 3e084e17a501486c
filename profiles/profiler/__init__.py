"""Profiling harness: times the shared torch kernels (models.torch_impl.kernels) at the shapes the op
graph produces and writes a profile table + device fingerprint (`run.py` has the command; `main(argv)`
and `run_profile(...)` live there). Importing this package does not import torch: the predictor uses
its torch-free modules (table, interp, fit)."""
