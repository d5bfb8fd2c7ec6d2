#include "nn/cpu/network.h"

#include "nn/cpu/factory.h"

namespace sb::cpu {

template <typename T>
Network<T>::Network(LayerSpec spec, uint64_t seed)
    : spec_(std::move(spec)), param_specs_(collect_params(spec_)), buffer_specs_(collect_buffers(spec_)) {
  const int64_t np = count_elements(param_specs_), nb = count_elements(buffer_specs_);
  std::vector<float> p(static_cast<size_t>(np)), b(static_cast<size_t>(nb));
  initialize_flat(param_specs_, seed, p.data());
  initialize_flat(buffer_specs_, seed, b.data());
  params_.assign(p.begin(), p.end());
  buffers_.assign(b.begin(), b.end());
  grads_.assign(static_cast<size_t>(np), T(0));
  root_ = make_layer<T>(spec_);
  root_->bind(params_.data(), grads_.data(), buffers_.data());
}

template class Network<float>;
template class Network<double>;

}  // namespace sb::cpu
