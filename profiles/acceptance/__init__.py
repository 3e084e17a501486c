"""Acceptance measurement on a real draft/target pair: prompt set (`prompts`), the measurement
(`measure`), its check against a real draft-then-verify loop (`verify`), the trace format and reader
(`trace`) and the pinned model download (`fetch`). Importing the package does not import torch."""
