// Creating a rank's CUDA context ahead of its engine, on another thread, so that it overlaps the reading
// of the data (the driver's start and the context take a tenth of a second or more).
#pragma once

namespace sb {

// Creates the primary context of the GPU the CUDA engine will take (local_rank modulo the visible GPUs,
// as make_cuda_engine does). Errors are cleared, not reported: the engine's own calls report them.
void create_cuda_context(int local_rank) noexcept;

}  // namespace sb
