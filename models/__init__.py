"""What is computed: the model catalog (`get_model`, `list_models`, `ModelSpec`) and the op graph of one
engine step (`models.opgraph`)."""
from __future__ import annotations

from models.catalog import get_model, list_models
from models.errors import UnknownNameError
from models.spec import DTYPE_BYTES, ModelSpec, dtype_bytes

__all__ = ["DTYPE_BYTES", "ModelSpec", "UnknownNameError", "dtype_bytes", "get_model", "list_models"]
