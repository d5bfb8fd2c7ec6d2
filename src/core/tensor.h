// Shapes and host tensors. The CPU reference always uses NCHW in a scalar type T (float or double).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace sb {

struct Shape {
  std::vector<int64_t> dims;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit Shape(std::vector<int64_t> d) : dims(std::move(d)) {}

  size_t rank() const { return dims.size(); }
  int64_t operator[](size_t i) const { return dims[i]; }
  int64_t& operator[](size_t i) { return dims[i]; }
  int64_t numel() const {
    return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  bool operator==(const Shape& o) const { return dims == o.dims; }
  bool operator!=(const Shape& o) const { return dims != o.dims; }
  std::string str() const {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i) s += 'x';
      s += std::to_string(dims[i]);
    }
    return s + "]";
  }
};

// Describes a tensor that lives anywhere: shape, element type and layout. The shape is always given
// in logical NCHW order; the layout says how it is stored.
struct TensorDesc {
  Shape shape;
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
  size_t bytes() const { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }
};

// An owning host tensor in NCHW.
template <typename T>
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, T fill = T(0)) : shape_(std::move(shape)), data_(shape_.numel(), fill) {}

  // Resizes to the shape, keeping the storage when it is large enough (contents are unspecified).
  void resize(const Shape& shape) {
    shape_ = shape;
    data_.resize(static_cast<size_t>(shape.numel()));
  }
  void fill(T value) { std::fill(data_.begin(), data_.end(), value); }

  const Shape& shape() const { return shape_; }
  int64_t numel() const { return static_cast<int64_t>(data_.size()); }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  T& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  std::vector<T>& storage() { return data_; }
  const std::vector<T>& storage() const { return data_; }

 private:
  Shape shape_;
  std::vector<T> data_;
};

}  // namespace sb
