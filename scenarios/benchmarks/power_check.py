"""The power models (profiles.power) against the held-out H100 SXM power measurements of
profiles/data/gpu-forwards/h100-sxm-2026-11-26/power.csv (NVML board power of 6 s phases, with each phase's
achieved FLOP/s and bytes/s). Nothing is fitted to these rows: the models' constants come from datasheets and
published measurements (profiles.hardware, profiles.roofline); this prints how far they are.

Run: python -m scenarios.benchmarks.power_check
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from models.errors import doc_description, run_script, script_args
from profiles.hardware import get_hardware
from profiles.power import POWER_MODELS, gpu_power

DATA = Path(__file__).resolve().parents[2] / "profiles" / "data" / "gpu-forwards" / "h100-sxm-2026-11-26"
COLD_IDLE_W = 73.0   # the README's nvidia-smi reading before any work (power.csv's idle row is right after work)


def comparison() -> pd.DataFrame:
    """One row per measured phase (plus the cold idle): measured W, each model's W and relative error."""
    frame = pd.read_csv(DATA / "power.csv")
    rows = [{"phase": "idle (cold, README)", "measured_w": COLD_IDLE_W, "flop_per_s": 0.0, "bytes_per_s": 0.0}]
    rows += frame[["phase", "power_w", "flop_per_s", "bytes_per_s"]].rename(columns={"power_w": "measured_w"}) \
        .to_dict("records")
    hw = get_hardware("h100-sxm")
    out = pd.DataFrame(rows)
    for name in POWER_MODELS:
        model = gpu_power(hw, "bf16", name)
        idle = out["phase"].str.startswith("idle")
        predicted = [model.idle_w if is_idle else float(model.busy_w(f, b))
                     for is_idle, f, b in zip(idle, out["flop_per_s"], out["bytes_per_s"])]
        out[f"{name}_w"] = predicted
        out[f"{name}_err"] = (out[f"{name}_w"] - out["measured_w"]) / out["measured_w"]
    return out


def main(argv: list[str] | None = None) -> int:
    script_args(argparse.ArgumentParser(description=doc_description(__doc__)), argv)   # (no flags: --x refused)
    table = comparison()
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.float_format", "{:.3g}".format):
        print(table.drop(columns=["flop_per_s", "bytes_per_s"]).to_string(index=False))
    busy = ~table["phase"].str.startswith("idle")
    for name in POWER_MODELS:
        print(f"{name}: mean |error| over the busy phases {table.loc[busy, f'{name}_err'].abs().mean():.1%}, "
              f"forwards only {table.loc[table.phase.str.startswith('forward'), f'{name}_err'].abs().mean():.1%}")

    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
