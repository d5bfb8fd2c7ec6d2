#include "nn/cpu/containers.h"

#include <utility>

#include "nn/cpu/factory.h"
#include "nn/cpu/residual_add.h"
#include "nn/cpu/step_interrupt.h"

namespace sb::cpu {
namespace {
// A residual block's children: its main branch and, when the spec has one, its shortcut.
std::vector<LayerSpec> residual_children(const LayerSpec& spec) {
  std::vector<LayerSpec> children{spec.children.at(0)};
  if (spec.children.size() > 1) children.push_back(spec.children[1]);
  return children;
}
}  // namespace

template <typename T>
Container<T>::Container(std::vector<LayerSpec> child_specs) : child_specs_(std::move(child_specs)) {
  for (const auto& c : child_specs_) children_.push_back(make_layer<T>(c));
}
template <typename T>
void Container<T>::bind(T* params, T* grads, T* buffers) {
  for (size_t i = 0; i < children_.size(); ++i) {
    children_[i]->bind(params, grads, buffers);
    const int64_t np = count_elements(collect_params(child_specs_[i]));
    const int64_t nb = count_elements(collect_buffers(child_specs_[i]));
    if (params) params += np;
    if (grads) grads += np;
    if (buffers) buffers += nb;
  }
}
template <typename T>
void Container<T>::set_random_stream(uint64_t key, uint64_t step) {
  for (auto& c : children_) c->set_random_stream(key, step);
}
template <typename T>
void Container<T>::set_first_sample(int64_t first) {
  for (auto& c : children_) c->set_first_sample(first);
}

template <typename T>
Sequential<T>::Sequential(const LayerSpec& spec) : Container<T>(spec.children) {}
template <typename T>
const Tensor<T>& Sequential<T>::forward(const Tensor<T>& x, Mode mode) {
  const Tensor<T>* h = &x;
  for (auto& c : this->children_) {
    interrupt_point();
    h = &c->forward(*h, mode);
  }
  return *h;
}
template <typename T>
const Tensor<T>& Sequential<T>::backward(const Tensor<T>& dy) {
  const Tensor<T>* g = &dy;
  for (auto it = this->children_.rbegin(); it != this->children_.rend(); ++it) {
    interrupt_point();
    g = &(*it)->backward(*g);
  }
  return *g;
}

template <typename T>
Residual<T>::Residual(const LayerSpec& spec) : Container<T>(residual_children(spec)) {}
template <typename T>
const Tensor<T>& Residual<T>::forward(const Tensor<T>& x, Mode mode) {
  const Tensor<T>& a = this->children_[0]->forward(x, mode);
  const Tensor<T>& b = this->children_.size() > 1 ? this->children_[1]->forward(x, mode) : x;
  residual_add(a, b, y_);
  return y_;
}
template <typename T>
const Tensor<T>& Residual<T>::backward(const Tensor<T>& dy) {
  const Tensor<T>& da = this->children_[0]->backward(dy);
  const Tensor<T>& db = this->children_.size() > 1 ? this->children_[1]->backward(dy) : dy;
  residual_add(da, db, dx_);
  return dx_;
}

template class Container<float>;
template class Container<double>;
template class Sequential<float>;
template class Sequential<double>;
template class Residual<float>;
template class Residual<double>;

}  // namespace sb::cpu
