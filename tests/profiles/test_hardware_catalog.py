"""Hardware catalog: ids, datasheet figures, internal consistency, look-up errors."""
from __future__ import annotations

import pytest

from models.errors import UnknownNameError
from profiles.hardware import HARDWARE, HardwareSpec, get_hardware, list_hardware

IDS = ["a100-40gb", "a100-80gb", "b200", "b300", "cpu-local", "gb200", "gb300", "h100-pcie", "h100-sxm", "h200",
       "h800", "l40s", "mi300x", "rtx-pro-6000"]


def test_catalog_ids():
    assert list_hardware() == IDS
    for hw_id in IDS:
        hw = get_hardware(hw_id)
        assert isinstance(hw, HardwareSpec) and hw.id == hw_id and hw.source


def test_datasheet_figures():
    # Dense (no sparsity) BF16 peaks and memory from the vendors' datasheets.
    expect = {"h100-sxm": (989.4e12, 80e9, 3.35e12), "h200": (989.4e12, 141e9, 4.8e12),
              "a100-80gb": (312e12, 80e9, 2.039e12), "b200": (2250e12, 180e9, 8.0e12),
              "l40s": (362.05e12, 48e9, 864e9), "mi300x": (1307.4e12, 192e9, 5.3e12),
              "h100-pcie": (756e12, 80e9, 2.0e12), "h800": (989.4e12, 80e9, 3.35e12),
              "a100-40gb": (312e12, 40e9, 1.555e12), "b300": (2250e12, 288e9, 8.0e12),
              "gb200": (2500e12, 186e9, 8.0e12), "gb300": (2500e12, 288e9, 8.0e12),
              "rtx-pro-6000": (467.8e12, 96e9, 1.792e12)}
    for hw_id, (bf16, mem, bw) in expect.items():
        hw = get_hardware(hw_id)
        assert hw.peak_flops["bf16"] == pytest.approx(bf16, rel=1e-12)
        assert (hw.hbm_bytes, hw.hbm_bandwidth_bytes_per_s) == pytest.approx((mem, bw), rel=1e-12)
    assert get_hardware("h100-sxm").scaleup_bandwidth_bytes_per_s == 450e9  # 900 GB/s NVLink, both directions


@pytest.mark.parametrize("hw_id", IDS)
def test_consistency(hw_id):
    hw = get_hardware(hw_id)
    if hw_id != "cpu-local":  # the CPU has AMX for bf16 only; fp16 runs on AVX-512
        assert hw.peak_flops["bf16"] == hw.peak_flops["fp16"]
    assert hw.peak_flops["fp32"] < hw.peak_flops["bf16"]
    if "fp8" in hw.peak_flops:
        assert hw.peak_flops["fp8"] == pytest.approx(2 * hw.peak_flops["bf16"], rel=0.02)
    assert hw.scaleup_bandwidth_bytes_per_s >= hw.scaleout_bandwidth_bytes_per_s
    assert hw.scaleup_latency_s <= hw.scaleout_latency_s
    # Ridge point (FLOP per byte) of the BF16 roofline: decode-type GEMMs sit far below it on GPUs.
    if hw_id != "cpu-local":
        assert 100 < hw.peak_flops["bf16"] / hw.hbm_bandwidth_bytes_per_s < 600
    assert hash(hw) == hash(get_hardware(hw_id))


def test_cuda_totals_are_the_logged_ones():
    """cuda_total_bytes (what CUDA/HIP reports, the base of vLLM's and SGLang's KV budgets) where a log gives it,
    the source beside each value in profiles/hardware.py; elsewhere 0 (the datasheet's hbm_bytes stands in)."""
    gib = 1024 ** 3
    logged = {"h100-sxm": 79.19 * gib, "h200": 139.72 * gib, "a100-80gb": 79.25 * gib, "b200": 178.36 * gib,
              "a100-40gb": 42298834944, "l40s": 47576711168, "mi300x": 191.98 * gib}
    for hw_id in IDS:
        assert get_hardware(hw_id).cuda_total_bytes == pytest.approx(logged.get(hw_id, 0.0), rel=1e-12), hw_id
    # the driver keeps a few % of an NVIDIA GPU's decimal datasheet figure back, or adds (40 GB A100: 39.39 GiB is
    # 42.30 GB, 5.7 % above the decimal 40 GB); MI300X's "192 GB" is 192 GiB, of which HIP reports 191.98
    for hw_id, total in logged.items():
        assert 0.9 < total / get_hardware(hw_id).hbm_bytes < 1.1, hw_id


def test_matmul_rate_fallback_for_weight_only_dtypes():
    a100 = get_hardware("a100-80gb")
    assert a100.matmul_flops("fp8") == a100.peak_flops["bf16"]  # no FP8 tensor cores on Ampere
    assert a100.matmul_flops("int4") == a100.peak_flops["bf16"]
    assert get_hardware("h100-sxm").matmul_flops("fp8") == 1978.9e12


def test_unknown_hardware():
    with pytest.raises(UnknownNameError, match="unknown hardware 'h100'; allowed: a100-40gb, a100-80gb, b200"):
        get_hardware("h100")
    assert get_hardware(" H100-SXM ") is HARDWARE["h100-sxm"]


def test_spec_validation():
    base = get_hardware("h100-sxm")
    fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
    with pytest.raises(ValueError, match="hbm_bandwidth_bytes_per_s"):
        HardwareSpec(**{**fields, "hbm_bandwidth_bytes_per_s": 0.0})
    with pytest.raises(ValueError, match="peak_flops"):
        HardwareSpec(**{**fields, "peak_flops": {"fp8": 1.0}})
