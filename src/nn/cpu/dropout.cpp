#include "nn/cpu/dropout.h"

#include <algorithm>

#include "core/error.h"
#include "core/philox.h"

namespace sb {
namespace {
uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
// splitmix64's output function: a bijection that spreads every input bit over the whole word.
uint64_t splitmix64_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t dropout_mask_key(uint64_t stream_key, const std::string& layer_name) {
  return splitmix64_finalize(stream_key ^ fnv1a64(layer_name));
}

uint64_t slice_mask_offset(const std::string& layer_name, const Shape& shape, int64_t first_sample) {
  const int64_t per_sample = shape[0] > 0 ? shape.numel() / shape[0] : 0;
  const int64_t offset = first_sample * per_sample;
  if (offset % 4 != 0) {
    throw UserError("dropout '" + layer_name + "': a replica's slice starts at sample " + std::to_string(first_sample) +
                    " of " + std::to_string(per_sample) + " elements each, which is not a multiple of 4 elements; "
                    "use a batch per replica that is a multiple of 4");
  }
  return static_cast<uint64_t>(offset);
}

bool dropout_keeps(uint64_t mask_key, uint64_t step, uint64_t i, double p) {
  return static_cast<double>(philox_uniform_at(mask_key, step, i)) >= p;
}
}  // namespace sb

namespace sb::cpu {

template <typename T>
Dropout<T>::Dropout(const LayerSpec& spec)
    : name_(spec.name), p_(spec.p), mask_key_(dropout_mask_key(0, spec.name)) {  // stream 0 until keyed
  if (!(p_ >= 0.0 && p_ <= 1.0))
    throw UserError("dropout '" + spec.name + "' needs a probability between 0 and 1, got " + std::to_string(p_));
}

template <typename T>
void Dropout<T>::set_random_stream(uint64_t key, uint64_t step) {
  mask_key_ = dropout_mask_key(key, name_);
  step_ = step;
}

template <typename T>
const Tensor<T>& Dropout<T>::forward(const Tensor<T>& x, Mode mode) {
  y_.resize(x.shape());
  const int64_t n = x.numel();
  identity_ = mode == Mode::Eval || p_ == 0.0;
  if (identity_) {
    std::copy(x.data(), x.data() + n, y_.data());
    return y_;
  }
  // Scale in double, rounded once to T. Dropped elements are written as 0 rather than x * 0 * scale,
  // which is NaN when p == 1 makes the scale infinite.
  const T scale = static_cast<T>(1.0 / (1.0 - p_));
  keep_.resize(static_cast<size_t>(n));
  // Element i has mask index offset + i (offset: a multiple of 4). One Philox block gives the uniforms of
  // 4 consecutive indices (as philox_uniform_at defines them), so draw it once per 4 elements.
  const uint64_t offset = slice_mask_offset(name_, x.shape(), first_sample_);
  for (int64_t base = 0; base < n; base += 4) {
    const Philox4 block = philox4x32(step_, (offset + static_cast<uint64_t>(base)) >> 2, mask_key_);
    const int64_t count = std::min<int64_t>(4, n - base);
    for (int64_t j = 0; j < count; ++j) {
      const int64_t i = base + j;
      const bool keep = static_cast<double>(philox_uniform(block.v[j])) >= p_;
      keep_[static_cast<size_t>(i)] = keep;
      y_[i] = keep ? x[i] * scale : T(0);
    }
  }
  return y_;
}

template <typename T>
const Tensor<T>& Dropout<T>::backward(const Tensor<T>& dy) {
  if (dy.shape() != y_.shape())
    fatal("Dropout backward got a gradient of shape " + dy.shape().str() + " but its output was " +
          y_.shape().str());
  dx_.resize(dy.shape());
  const int64_t n = dy.numel();
  if (identity_) {
    std::copy(dy.data(), dy.data() + n, dx_.data());
    return dx_;
  }
  const T scale = static_cast<T>(1.0 / (1.0 - p_));
  for (int64_t i = 0; i < n; ++i) dx_[i] = keep_[static_cast<size_t>(i)] ? dy[i] * scale : T(0);
  return dx_;
}

template class Dropout<float>;
template class Dropout<double>;

}  // namespace sb::cpu
