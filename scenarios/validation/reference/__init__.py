"""The reference engine: a real torch serving loop the simulator is validated against.

- `engine`: `ReferenceEngine` / `run_reference(scenario, base_dir, ReferenceConfig)` → `ReferenceResult`
  (continuous batching by the simulator's own scheduler, real draft + target passes, forced acceptance).
- `model`: `FusedDecoder`, the decoder in the op graph's fused layout on the profiled kernels.
- `compare`: step-by-step and per-request errors, median run over repeats.
- `diagnose`: measured vs priced time by op kind; in-context vs isolated kernel time.
- `report`: table, CSV/JSON, plot. `workload`: offline validation traces.
`profiles.validate` is the `draftsim validate` command built on these.
"""
