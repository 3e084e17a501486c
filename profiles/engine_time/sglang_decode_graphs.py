"""SGLang's decode CUDA graphs by release: the batch sizes (in requests) it captures by default, and the largest.

Read in the PyPI wheels (sglang/srt/server_args.py for `cuda_graph_max_bs` and, from v0.5.3, the list itself;
model_executor/cuda_graph_runner.py `CudaGraphRunner.__init__` (0.4.0 - 0.4.2) / `get_batch_sizes_to_capture`
(0.4.3 - 0.5.2) for the list before v0.5.3; from v0.5.19 arg_groups/memory_hook.py `handle_gpu_memory_settings`
and arg_groups/cuda_graph_hook.py `generate_decode_cuda_graph_batch_sizes`). `gpu_mib` is SGLang's gpu_mem
(nvidia-smi's memory.total, MiB), taken as the memory CUDA reports as the memory rules take it
(approximation, named in simulator.cluster.sglang_memory: an H100's 81,559 MiB vs CUDA's 79.19 GiB; no tier edge
lies between the two for a catalog GPU).

Before v0.5.3 the list tops out at 160 unless the GPU is large:
- 0.4.0 - 0.4.4.post4: `[1, 2, 4] + [8·i for i in 1..20]`; with speculation from v0.4.3.post3 (`if
  server_args.speculative_algorithm is None: ... else: capture_bs = list(range(1, 33))`, get_batch_sizes_to_capture
  read in v0.4.3.post3 - v0.4.4.post4); with `disable_cuda_graph_padding` `range(1, 32) + [64, 128]` (v0.4.0 -
  v0.4.0.post1), `range(1, 33) + [64, 128]` (v0.4.0.post2 - v0.4.3.post2), `range(1, 33) + [64, 96, 128, 160]`
  (v0.4.3.post3 - v0.4.4.post4, without speculation) — which is the EAGLE default of v0.4.1.post4 - v0.4.3.post2,
  whose EAGLE block sets disable_cuda_graph_padding (`sglang_eagle_pads`); then at most `cuda_graph_max_bs`,
  which is 160 (server_args.py `__post_init__`), 8 below 25,000 MiB (from v0.4.1 80 at TP ≥ 4);
- 0.4.5 - 0.4.6: `[1, 2, 4, 8] + range(16, 161, 8)`; with speculation `range(1, 9) + range(10, 33, 2) +
  range(40, 161, 16)`; cuda_graph_max_bs still 160 in v0.4.5; v0.4.6 leaves it unset (only 8 / 80 below 25,000
  MiB) and adds `range(160, 257, 8)` above 81,920 MiB (with dp_size 1);
- 0.4.7: the speculative list becomes `range(1, 9) + range(10, 33, 2) + range(40, 64, 8) + range(80, 161, 16)`;
  `range(160, 257, 8)` above 96 GiB and `range(256, 513, 16)` above 180,000 MiB;
- 0.4.8 - 0.5.2: the same lists, `range(160, 257, 8)` above 90 GiB ("H200, H20") and `range(256, 513, 16)` above
  160,000 MiB ("B200, MI300"); cuda_graph_max_bs 8 / 80 below 35 GiB.
From v0.5.3 server_args.py sets cuda_graph_max_bs by GPU memory and TP and generates the list up to it
(`_generate_cuda_graph_batch_sizes`): `[1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16) + range(512, max
+ 1, 32)`; with speculation `range(1, 9) + range(10, 33, 2) + range(40, 64, 4) + range(72, 257, 8) + range(272,
max + 1, 16)` (`range(40, 65, 4)` from v0.5.5); max 8 below 20 GiB; below 35 GiB 16 (TP < 4) / 80 in 0.5.3 -
0.5.4, 24 / 80 in 0.5.5 - 0.5.19, 48 / 160 from 0.5.20 (RTX 5090: 'the previous cap forced eager decode at
bs>=32'); 32 / 160 below 60 GiB; 256 / 512 below 160 GiB; 512 above.

The running limit (`req_to_token_pool.size`, max_running_requests): sizes above it are dropped and it is captured
instead when the list reaches past it (from v0.4.1; v0.4.1 - v0.4.5 also capture it minus one; v0.4.0 only drops).

Padding: SGLang pads a batch up to the next captured size unless `disable_cuda_graph_padding` (then only a
captured size replays: CudaGraphRunner.can_run `forward_batch.batch_size in self.graphs`), which the EAGLE block of
ServerArgs.__post_init__ sets in v0.4.1.post4 - v0.4.4.post1 (`self.disable_cuda_graph_padding = True`; dropped in
v0.4.4.post2): `sglang_eagle_pads`.

Approximations (named): the lists of `disable_cuda_graph_padding` from v0.4.5 (v0.4.5's adds a range to a list
and fails), ROCm's extra sizes of v0.4.3 (`range(168, 257, 8)` after
the cap), v0.4.6's dp_size condition, torch.compile sizes and two-batch overlap's even sizes are not modelled.
"""
from __future__ import annotations

from profiles.measured.source import version_before as _before

LIST_FROM_SERVER_ARGS = "0.5.3"   # server_args.py generates the list and sets cuda_graph_max_bs by GPU tier
SPEC_LIST_FROM = "0.4.3.post3"    # get_batch_sizes_to_capture's own list with speculation (module docstring)
EAGLE_UNPADDED = ("0.4.1.post4", "0.4.4.post2")   # [first, first without) EAGLE's disable_cuda_graph_padding


def sglang_eagle_pads(version: str) -> bool:
    """Whether SGLang `version` pads decode batches to a captured size by default with EAGLE speculation (the only
    speculation these releases have): not where its EAGLE block sets disable_cuda_graph_padding (module docstring)."""
    return _before(version, EAGLE_UNPADDED[0]) or not _before(version, EAGLE_UNPADDED[1])


def _legacy_sizes(version: str, gpu_mib: float, tp: int, speculating: bool, padding: bool = True) -> list[int]:
    """The default capture list of a release before LIST_FROM_SERVER_ARGS (module docstring), before the
    running limit; `padding` False: disable_cuda_graph_padding (its own lists before v0.4.5)."""
    if _before(version, "0.4.5"):
        if speculating and not _before(version, SPEC_LIST_FROM):
            sizes = list(range(1, 33))
        elif not padding:
            sizes = list(range(1, 32 if _before(version, "0.4.0.post2") else 33)) + (
                [64, 128] if _before(version, SPEC_LIST_FROM) else [64, 96, 128, 160])
        else:
            sizes = [1, 2, 4] + [8 * i for i in range(1, 21)]
    elif speculating:
        middle = list(range(40, 161, 16)) if _before(version, "0.4.7") else list(range(40, 64, 8)) + list(range(80, 161, 16))
        sizes = list(range(1, 9)) + list(range(10, 33, 2)) + middle
    else:
        sizes = [1, 2, 4, 8] + list(range(16, 161, 8))
    if _before(version, "0.4.6"):
        pass
    elif _before(version, "0.4.7"):
        if gpu_mib > 81920:
            sizes += list(range(160, 257, 8))
    else:
        mid, top = (96 * 1024, 180_000) if _before(version, "0.4.8") else (90 * 1024, 160_000)
        if gpu_mib > mid:
            sizes += list(range(160, 257, 8))
        if gpu_mib > top:
            sizes += list(range(256, 513, 16))
    small = gpu_mib < (25_000 if _before(version, "0.4.8") else 35 * 1024)
    cap = (8 if tp < 4 or _before(version, "0.4.1") else 80) if small else 160 if _before(version, "0.4.6") else None
    return sorted({s for s in sizes if cap is None or s <= cap})


def sglang_max_bs(gpu_mib: float, tp: int, version: str) -> int:
    """SGLang's largest default decode capture size at release `version` (module docstring; without speculation
    and before the running limit): from v0.5.3 its `cuda_graph_max_bs`."""
    if _before(version, LIST_FROM_SERVER_ARGS):
        return _legacy_sizes(version, gpu_mib, tp, speculating=False)[-1]
    gib = gpu_mib / 1024
    if gib < 20:
        return 8
    if gib < 35:
        small = (16, 80) if _before(version, "0.5.5") else (24, 80) if _before(version, "0.5.20") else (48, 160)
        return small[tp >= 4]
    if gib < 60:
        return 32 if tp < 4 else 160
    if gib < 160:
        return 256 if tp < 4 else 512
    return 512


def sglang_decode_sizes(version: str, gpu_mib: float, tp: int, speculating: bool, max_running: int,
                        padding: bool = True) -> tuple[int, ...]:
    """The batch sizes SGLang captures its decode (and verify) CUDA graphs at by default (module docstring);
    `padding` False: with disable_cuda_graph_padding."""
    if _before(version, LIST_FROM_SERVER_ARGS):
        sizes = _legacy_sizes(version, gpu_mib, tp, speculating, padding)
    else:
        top = sglang_max_bs(gpu_mib, tp, version)
        if speculating:
            sizes = (list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 64 if _before(version, "0.5.5") else 65, 4))
                     + list(range(72, 257, 8)) + list(range(272, top + 1, 16)))
        else:
            sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16)) + list(range(512, top + 1, 32))
        sizes = [s for s in sizes if s <= top]
    if sizes[-1] > max_running:
        extra = [] if _before(version, "0.4.1") else [max_running - 1, max_running] if _before(version, "0.4.6") \
            else [max_running]
        sizes = sorted({s for s in sizes + extra if 1 <= s <= max_running})
    return tuple(sizes)
