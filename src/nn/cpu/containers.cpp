#include "nn/cpu/containers.h"

#include "nn/cpu/factory.h"
#include "nn/cpu/residual_add.h"
#include "nn/cpu/step_interrupt.h"

namespace sb::cpu {
namespace {
template <typename T>
void bind_in_order(const std::vector<LayerSpec>& specs, const std::vector<std::unique_ptr<Layer<T>>>& layers,
                   T* params, T* grads, T* buffers) {
  for (size_t i = 0; i < layers.size(); ++i) {
    layers[i]->bind(params, grads, buffers);
    const int64_t np = count_elements(collect_params(specs[i]));
    const int64_t nb = count_elements(collect_buffers(specs[i]));
    if (params) params += np;
    if (grads) grads += np;
    if (buffers) buffers += nb;
  }
}
}  // namespace

template <typename T>
Sequential<T>::Sequential(const LayerSpec& spec) : child_specs_(spec.children) {
  for (const auto& c : child_specs_) children_.push_back(make_layer<T>(c));
}
template <typename T>
void Sequential<T>::bind(T* params, T* grads, T* buffers) {
  bind_in_order(child_specs_, children_, params, grads, buffers);
}
template <typename T>
void Sequential<T>::set_random_stream(uint64_t key, uint64_t step) {
  for (auto& c : children_) c->set_random_stream(key, step);
}
template <typename T>
void Sequential<T>::set_first_sample(int64_t first) {
  for (auto& c : children_) c->set_first_sample(first);
}
template <typename T>
const Tensor<T>& Sequential<T>::forward(const Tensor<T>& x, Mode mode) {
  const Tensor<T>* h = &x;
  for (auto& c : children_) {
    interrupt_point();
    h = &c->forward(*h, mode);
  }
  return *h;
}
template <typename T>
const Tensor<T>& Sequential<T>::backward(const Tensor<T>& dy) {
  const Tensor<T>* g = &dy;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    interrupt_point();
    g = &(*it)->backward(*g);
  }
  return *g;
}

template <typename T>
Residual<T>::Residual(const LayerSpec& spec) : main_spec_(spec.children.at(0)) {
  main_ = make_layer<T>(spec.children[0]);
  if (spec.children.size() > 1) shortcut_ = make_layer<T>(spec.children[1]);
}
template <typename T>
void Residual<T>::bind(T* params, T* grads, T* buffers) {
  main_->bind(params, grads, buffers);
  if (!shortcut_) return;
  const int64_t np = count_elements(collect_params(main_spec_));
  const int64_t nb = count_elements(collect_buffers(main_spec_));
  shortcut_->bind(params ? params + np : nullptr, grads ? grads + np : nullptr, buffers ? buffers + nb : nullptr);
}
template <typename T>
void Residual<T>::set_random_stream(uint64_t key, uint64_t step) {
  main_->set_random_stream(key, step);
  if (shortcut_) shortcut_->set_random_stream(key, step);
}
template <typename T>
void Residual<T>::set_first_sample(int64_t first) {
  main_->set_first_sample(first);
  if (shortcut_) shortcut_->set_first_sample(first);
}
template <typename T>
const Tensor<T>& Residual<T>::forward(const Tensor<T>& x, Mode mode) {
  const Tensor<T>& a = main_->forward(x, mode);
  const Tensor<T>& b = shortcut_ ? shortcut_->forward(x, mode) : x;
  residual_add(a, b, y_);
  return y_;
}
template <typename T>
const Tensor<T>& Residual<T>::backward(const Tensor<T>& dy) {
  const Tensor<T>& da = main_->backward(dy);
  const Tensor<T>& db = shortcut_ ? shortcut_->backward(dy) : dy;
  residual_add(da, db, dx_);
  return dx_;
}

template class Sequential<float>;
template class Sequential<double>;
template class Residual<float>;
template class Residual<double>;

}  // namespace sb::cpu
