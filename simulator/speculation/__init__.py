"""Speculative decoding: verification shapes (`shapes`: chain, trees, dynamic trees, multi-draft),
acceptance models (`acceptance`, `tree_acceptance`, `trace_acceptance`) and speculation control policies
(`control`)."""
