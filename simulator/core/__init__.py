"""The DES core: the SimPy engine of pools (`engine`), one replica's continuous batching and KV blocks
(`replica`), bulk stepping (`bulk`), request state and the step log (`state`), routers (`routers`) and the
request workload (`workload`, `lengths`)."""
