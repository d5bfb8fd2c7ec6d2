// The number of hardware work queues a CUDA context gets (CUDA_DEVICE_MAX_CONNECTIONS). With CUDA's
// default of 8, more streams than that share queues, and a stream's work waits behind another's in the same
// queue: with --decode gpu, the workers' decode streams and nvJPEG's own wait behind the training kernels
// (docs/image_data.md, "GPU decoding").
#pragma once
#include <string>

namespace sb {

inline constexpr const char* kCudaWorkQueuesVariable = "CUDA_DEVICE_MAX_CONNECTIONS";
inline constexpr const char* kCudaWorkQueues = "32";  // CUDA's most

// Sets CUDA_DEVICE_MAX_CONNECTIONS to 32 unless the environment sets it already. Call it before anything
// can create a CUDA context (MPI_Init included), since a context reads it once, when it starts.
void set_cuda_work_queues_unless_set();

// The value the CUDA contexts of this process read ("8", CUDA's default, where it is unset).
std::string cuda_work_queues();

}  // namespace sb
