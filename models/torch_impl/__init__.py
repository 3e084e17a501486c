"""Real torch implementations of the catalog's decoder families, built on the op-level kernels in
`models.torch_impl.kernels` (the same functions the profiler times). Importing this package does not
import torch; import the submodules you need."""
