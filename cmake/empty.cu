// Placeholder so that sb_cuda has a source before the CUDA backend exists.
