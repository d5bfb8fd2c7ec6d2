#include "data/cuda/emulated_gpu_target.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "core/cuda_check.h"
#include "data/cuda/gpu_decode_source.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {
namespace {

class GpuDecodeTarget final : public EmulatedTarget {
 public:
  GpuDecodeTarget(const Dataset& data, BatchFormat format, int64_t batch, int rank, InputCounters& counters)
      : counters_(counters),
        decoders_(batch, BadImages::Fail, rank, counters),
        source_(data, true, format, decoders_),
        batch_bytes_(static_cast<size_t>(batch * data.sample_bytes()) * dtype_size(format.dtype)),
        copy_stream_(CudaStream::create_non_blocking()),
        started_(CudaEvent::create()),
        finished_(CudaEvent::create()) {
    labels_.ensure(static_cast<size_t>(batch) * sizeof(int32_t));
  }
  ~GpuDecodeTarget() override { copy_stream_.synchronize_noexcept(); }

  const BatchSource& source() const override { return source_; }

  void add_slot(const std::byte* host_rows) override {
    decoders_.add_slot(host_rows, decoded_.emplace_back(DeviceBuffer::outside_graphs()).ensure(batch_bytes_));
  }

  // The batch stays where it was decoded (its decode synchronised by the worker); its labels go up.
  void upload(const HostBatch& batch) override {
    const size_t rows = static_cast<size_t>(batch.rows);
    started_.record(copy_stream_.get());
    CHECK_CUDA(cudaMemcpyAsync(labels_.data(), batch.buffer.labels, rows * sizeof(int32_t), cudaMemcpyHostToDevice,
                               copy_stream_.get()));
    finished_.record(copy_stream_.get());
    finished_.synchronize();
    counters_.add_copy(static_cast<int64_t>(1e6 * CudaEvent::elapsed_ms(started_, finished_)));
  }
  bool reads_in_place() const override { return true; }

 private:
  InputCounters& counters_;
  GpuDecoders decoders_;
  GpuDecodeSource source_;
  size_t batch_bytes_;
  CudaStream copy_stream_;
  CudaEvent started_, finished_;
  std::vector<DeviceBuffer> decoded_;  // per ring slot, the batch the workers decode into
  DeviceBuffer labels_;
};

}  // namespace

MakeEmulatedTarget gpu_decode_target(const Dataset& data, BatchFormat format, int64_t batch, int rank) {
  return [&data, format, batch, rank](InputCounters& counters) -> std::unique_ptr<EmulatedTarget> {
    return std::make_unique<GpuDecodeTarget>(data, format, batch, rank, counters);
  };
}

}  // namespace sb::cuda
