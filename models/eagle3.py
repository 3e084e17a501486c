"""EAGLE-3 draft heads: their specs (catalog `models/heads/eagle3.yaml`) and the op graph of one draft pass.

An EAGLE-3 head (Li et al., arXiv:2503.01840; vLLM `model_executor/models/llama_eagle3.py`, SGLang
`models/llama_eagle3.py`) drafts from the target's own hidden states:

* fc: the target's hidden states at three layers (low, middle, high; `eagle_aux_hidden_state_layer_ids`) are
  captured during the target's forward, concatenated (3·h_target per token) and fused by one GEMM
  3·h_target → h (`combine_hidden_states`, vLLM `ReplicatedLinear`: the whole matrix on every TP rank). It
  runs once per step, on the tokens the target just processed (`fuse_ops`).
* one Llama decoder layer of hidden size h whose attention reads [RMSNorm(token embedding) ;
  RMSNorm(hidden state)]: qkv_proj has 2·h inputs (vLLM overrides `qkv_proj` with `2 * hidden_size`),
  with its own KV cache; `hidden_norm` is the extra RMSNorm; MLP of `intermediate_size`; final RMSNorm;
* an LM head over `draft_vocab_size` tokens (32k for the published Llama-3 and gpt-oss heads, against the
  target's 128k–201k), then the draft-to-target map `d2t`: vLLM's `compute_logits` writes a full
  target-vocabulary logits row of −inf and scatters the draft logits into it, and the proposer takes the
  argmax over the target vocabulary (`d2t_map` + `sampling` ops below).

The map's row is the head's config.json `vocab_size` (vLLM `compute_logits`): the target's for a head trained
on it; every engine serves a head of another size (profiles.engine_time.eagle3_embedding, with the vLLM releases
that cannot give such a head an embedding).

The token embedding is the target's where the engine hands it over; whether the head's own stays in memory is
the engine release's rule (profiles.engine_time.eagle3_embedding.keeps_own_embedding, passed to `param_count`).

Approximations, named where they are made: SGLang and TensorRT-LLM map ids instead (top-k or argmax over the draft
vocabulary, then a gather or add of d2t for the chosen ids): pricing vLLM's full-vocabulary map over-prices them by
(V − V_draft)·2 bytes per logits row (12 MB at 64 rows of Llama-3, ≈ 4 µs of HBM time on an H100).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from models.errors import UnknownNameError, brief, catalog_key
from models.files import load_shipped_yaml
from models.opgraph import NORM_FLOPS_PER_ELEMENT, dense_ops, gemm_op
from models.ops import NORM, SAMPLING, Op
from models.spec import ModelSpec, activation_bytes, dtype_bytes, integer_expected, kv_heads_per_gpu, max_of
from models.step import Parallelism

HEADS_FILE = Path(__file__).resolve().parent / "heads" / "eagle3.yaml"
AUX_LAYERS = 3            # hidden states the target captures per token (EAGLE-3's low/mid/high fusion)
D2T_INDEX_BYTES = 8       # vLLM keeps draft_id_to_target_id as int64 (one per draft-vocabulary token)


@dataclass(frozen=True)
class Eagle3Head:
    """One EAGLE-3 head, field names as in its config.json (module docstring)."""

    name: str
    target: str
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    draft_vocab_size: int
    target_hidden_size: int
    vocab_size: int                  # config.json vocab_size: its own embedding's rows and vLLM's d2t row (the
    # target's for a head trained on it; another size is served: profiles.engine_time.eagle3_embedding)
    shares_embedding: bool = True
    repo: str = ""                   # the Hugging Face repository of the head's weights, where one is known
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("hidden_size", "intermediate_size", "num_heads", "num_kv_heads", "head_dim", "draft_vocab_size",
                     "target_hidden_size", "vocab_size"):
            # (the bounds of a model's fields, models.spec: an intermediate_size of 2e6 passed here and was
            # refused by the head's layer ModelSpec as the drafter was built, a traceback)
            value = getattr(self, name)
            expected = integer_expected(value, 1, max_of("vocab_size" if "vocab" in name else
                                                         "hidden_size" if name == "target_hidden_size" else name))
            if expected:
                raise ValueError(f"EAGLE-3 head {self.name!r}: {name} is {brief(value)}; expected {expected}")
        if not isinstance(self.shares_embedding, bool):   # (bool("false") is True: it ran as a shared embedding)
            raise ValueError(f"EAGLE-3 head {self.name!r}: shares_embedding is {brief(self.shares_embedding)}; "
                             "expected true or false")
        if self.draft_vocab_size > self.vocab_size:
            raise ValueError(f"EAGLE-3 head {self.name!r}: draft_vocab_size={self.draft_vocab_size} exceeds the "
                             f"target's vocab_size={self.vocab_size}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"EAGLE-3 head {self.name!r}: num_heads must be a multiple of num_kv_heads")
        if self.shares_embedding and self.hidden_size != self.target_hidden_size:
            # No engine gives a head of another width the target's embedding: SGLang's set_embed (models/llama.py,
            # 0.4.5 - 0.5.23) and TensorRT-LLM's Eagle3DraftModel (modeling_speculative.py) keep the head's own
            # where target_hidden_size != hidden_size, vLLM 0.9.1 - 0.11.0 and from 0.25.0 where the shapes or
            # widths differ (EagleProposer.load_model), all of them a head's own that such a checkpoint lacks;
            # vLLM's other releases share it and a draft pass's concatenation fails (0.15.0's llama_eagle3:
            # `assert hidden_states.shape[-1] == input_embeds.shape[-1]`). Such a head ran, priced without the
            # embedding it needs (exit 0).
            raise ValueError(f"EAGLE-3 head {self.name!r}: shares_embedding true needs hidden_size = "
                             f"target_hidden_size, as engines give the target's {self.target_hidden_size}-wide "
                             f"embedding only to a head of that width; hidden_size is {self.hidden_size}: expected "
                             "shares_embedding: false (the checkpoint's own embed_tokens) or hidden_size "
                             f"{self.target_hidden_size}")

    def layer_spec(self) -> ModelSpec:
        """The head's decoder layer as a one-layer ModelSpec whose vocabulary is the draft vocabulary (its
        attention, MLP and LM head; `pass_ops` adds what EAGLE-3 changes)."""
        return ModelSpec(name=f"{self.name}[layer]", family="eagle3", hidden_size=self.hidden_size, num_layers=1,
                         num_heads=self.num_heads, num_kv_heads=self.num_kv_heads, head_dim=self.head_dim,
                         intermediate_size=self.intermediate_size, vocab_size=self.draft_vocab_size,
                         max_position_embeddings=4096, source=self.source)

    # ---- parameters --------------------------------------------------------------------------------
    def fc_params(self) -> int:
        return AUX_LAYERS * self.target_hidden_size * self.hidden_size

    def layer_params(self) -> int:
        """qkv (2h inputs), o, gate/up/down and the layer's three RMSNorms (input, hidden, post-attention)."""
        h, q = self.hidden_size, self.num_heads * self.head_dim
        kv = self.num_kv_heads * self.head_dim
        return 2 * h * (q + 2 * kv) + q * h + 3 * h * self.intermediate_size + 3 * h

    def param_count(self, own_embedding: bool | None = None) -> int:
        """Weights the head adds to the GPU: fc + layer + final norm + LM head, + an embedding of its own
        (vocab_size x hidden_size) where `own_embedding` (None: where the checkpoint has one, not
        shares_embedding; the engine's rule: profiles.engine_time.eagle3_embedding.keeps_own_embedding)."""
        own = self.fc_params() + self.layer_params() + self.hidden_size + self.draft_vocab_size * self.hidden_size
        held = not self.shares_embedding if own_embedding is None else own_embedding
        return own + (self.vocab_size * self.hidden_size if held else 0)

    def weight_bytes_per_gpu(self, tp: int, dtype: str, own_embedding: bool | None = None) -> float:
        """On each of the target's tp ranks: the fc whole (replicated), the layer, LM head and an own embedding
        (`param_count`'s `own_embedding`) split over tp (QKV/row-parallel linears, vocab-parallel head and
        embedding), the d2t map (int64) whole."""
        w = dtype_bytes(dtype)
        shared = self.fc_params() * w + self.draft_vocab_size * D2T_INDEX_BYTES
        return shared + (self.param_count(own_embedding) - self.fc_params()) * w / tp

    def kv_bytes_per_token_per_gpu(self, tp: int, kv_dtype: str) -> float:
        """One layer of K and V per token, KV heads split over tp as the target's (models.spec)."""
        return 2.0 * kv_heads_per_gpu(self.layer_spec(), tp) * self.head_dim * dtype_bytes(kv_dtype)


def pass_ops(head: Eagle3Head, num_tokens: int, logits_tokens: int, tp: int, dtype: str = "bf16") -> list[Op]:
    """Non-attention ops of one EAGLE-3 draft pass over `num_tokens` tokens with `logits_tokens` logits rows
    (per GPU of the target's tp): the one-layer op graph of `layer_spec` (models.opgraph.dense_ops) with
    qkv_proj reading 2h inputs, the extra `hidden_norm`, and the draft-to-target map before the argmax."""
    spec = head.layer_spec()
    ops = dense_ops(spec, num_tokens, logits_tokens, Parallelism(tp, 1), dtype)
    if not ops:
        return ops
    w, a = dtype_bytes(dtype), activation_bytes(dtype)
    h, t = head.hidden_size, float(num_tokens)
    out = []
    for op in ops:
        if op.name == "qkv_proj":
            op = gemm_op("qkv_proj", t, op.dim("n"), 2 * h, 1, w, a)
        elif op.name == "sampling":
            continue   # replaced by the map + the argmax over the target vocabulary below
        out.append(op)
    out.append(Op.make(NORM, "hidden_norm", NORM_FLOPS_PER_ELEMENT * t * h, a * (2.0 * t * h + h), 1,
                       tokens=t, hidden=h))
    if logits_tokens:
        lt, v, dv = float(logits_tokens), float(head.vocab_size), float(head.draft_vocab_size)
        out.append(Op.make(SAMPLING, "d2t_map", 0.0, lt * v * a + lt * dv * a + dv * D2T_INDEX_BYTES, 1,
                           tokens=lt, vocab=v))
        out.append(Op.make(SAMPLING, "sampling", lt * v, lt * v * a, 1, tokens=lt, vocab=v))
    return out


def fuse_ops(head: Eagle3Head, num_tokens: int, dtype: str = "bf16") -> list[Op]:
    """The fc fusing the captured hidden states of `num_tokens` target tokens (3·h_target → h, replicated)."""
    if num_tokens <= 0:
        return []
    w, a = dtype_bytes(dtype), activation_bytes(dtype)
    return [gemm_op("eagle3_fc", float(num_tokens), head.hidden_size, AUX_LAYERS * head.target_hidden_size, 1, w, a)]


def capture_ops(target: ModelSpec, num_tokens: float, dtype: str = "bf16") -> list[Op]:
    """What the target pays to capture its hidden states for EAGLE-3, per GPU of one attention group, for
    `num_tokens` tokens: at each of the three aux layers vLLM's Llama forward stores `hidden_states +
    residual` (read 2h, write h per token), and the model runner concatenates the three (read 3h, write 3h):
    15·h activation elements moved per token. Approximation: priced unfused (torch.compile may fold the adds
    into the neighbouring fused add-RMSNorm, leaving only the writes: 6·h); both are < 1 % of a pass."""
    if num_tokens <= 0:
        return []
    a, h, t = activation_bytes(dtype), float(target.hidden_size), float(num_tokens)
    return [Op.make(NORM, "eagle3_aux_capture", AUX_LAYERS * t * h, 15.0 * a * t * h, 1, tokens=t,
                    hidden=AUX_LAYERS * h)]


# ---- catalog -------------------------------------------------------------------------------------------
_FIELDS = {f.name for f in fields(Eagle3Head)} - {"name"}


def head_from_fields(name: str, data: dict, where: str = "drafter.head") -> Eagle3Head:
    """An Eagle3Head from a mapping of its fields (a catalog entry or an inline YAML block)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of EAGLE-3 head fields")
    unknown = set(data) - _FIELDS
    missing = {"hidden_size", "intermediate_size", "num_heads", "num_kv_heads", "head_dim", "draft_vocab_size",
               "target_hidden_size", "vocab_size"} - set(data)
    if unknown or missing:
        raise ValueError(f"{where}: {'unknown fields ' + str(sorted(unknown)) if unknown else ''}"
                         f"{'; ' if unknown and missing else ''}"
                         f"{'missing fields ' + str(sorted(missing)) if missing else ''}; "
                         f"allowed: {', '.join(sorted(_FIELDS))}")
    try:
        return Eagle3Head(name=name, **{"target": "", **data})
    except TypeError as exc:
        raise ValueError(f"{where}: {exc}") from None


@lru_cache(maxsize=1)
def eagle3_heads() -> dict[str, Eagle3Head]:
    raw = load_shipped_yaml(HEADS_FILE) or {}
    return {str(name): head_from_fields(str(name), entry, f"{HEADS_FILE.name}: {name}") for name, entry in raw.items()}


def get_eagle3_head(name: str) -> Eagle3Head:
    heads = eagle3_heads()
    key = catalog_key(name)
    if key not in heads:
        raise UnknownNameError("EAGLE-3 head", str(name), heads)
    return heads[key]


def head_for_target(target: str) -> Eagle3Head | None:
    """The catalog head published for catalog model `target`, if any."""
    for head in eagle3_heads().values():
        if head.target == target:
            return head
    return None
