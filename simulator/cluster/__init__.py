"""Replicas, pools and the network: the one replica factory (`factory`), the cluster of pools built from
a scenario (`build`), the prefill/decode replica kinds (`pool_replicas`), the KV hand-off between pools
(`handoff`), where pools sit and what a request's KV moves (`kv_transfer`) and the link model (`network`)."""
