// A grow-only block of device memory. Layers keep their outputs in these so that, after one warm-up
// step, no address changes any more and the whole step can be captured in a CUDA graph.
#pragma once
#include <string>
#include <cstddef>
#include <cstdint>

namespace sb::cuda {

// `bytes` rounded up to the alignment of every DeviceBuffer block (256 bytes: views at such offsets are
// aligned for vector loads and cuDNN's 16-byte rule), so that views laid out by it are aligned too.
constexpr size_t device_aligned_bytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // A buffer no captured step reads (the input pipeline's decode buffers, which other threads grow while
  // steps run): its growth leaves the captured graphs valid (device_buffer_generation()).
  static DeviceBuffer outside_graphs() {
    DeviceBuffer b;
    b.read_by_graphs_ = false;
    return b;
  }
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(o.data_), bytes_(o.bytes_), device_(o.device_), read_by_graphs_(o.read_by_graphs_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes` of device memory. Grows (the old contents are lost) only when smaller; never
  // shrinks. Growing frees the old block, which waits for the device (cudaFree), so it must not happen
  // inside a stream capture.
  void* ensure(size_t bytes);
  template <typename T>
  T* ensure_as(size_t count) { return static_cast<T*>(ensure(count * sizeof(T))); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void release();  // frees the block and takes it off its device's count

  void* data_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;  // where the block lives
  bool read_by_graphs_ = true;
};

// The bytes that DeviceBuffers hold on `device` now, and the most they held at once since the process
// started: every tensor, gradient, optimizer state and workspace of scalebench's own, without the CUDA
// context or the libraries' internal memory (cuDNN's, NCCL's, nvJPEG's). The counterpart of PyTorch's
// torch.cuda.memory_allocated() and max_memory_allocated().
size_t device_buffer_bytes(int device);
size_t device_buffer_peak_bytes(int device);

// How many times any DeviceBuffer a graph may read has allocated a block so far in this process. A CUDA
// graph holds the addresses it was captured with: while this count stays the same, none of them has moved.
uint64_t device_buffer_generation();

// What an out-of-memory message suggests, e.g. "training wrn with a batch of 256 per rank in bf16; lower
// --batch-size". A failed allocation stops the whole job with the sizes and this sentence.
void set_out_of_memory_hint(const std::string& hint);

}  // namespace sb::cuda
