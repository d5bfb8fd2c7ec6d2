#include "nn/cuda/network.h"

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/elementwise.h"
#include "nn/cuda/containers.h"
#include "nn/cuda/factory.h"
#include "nn/fusion_plan.h"

namespace sb::cuda {

std::string Network::fusion_report() const {
  const std::string layers = cuda::fusion_report(*root_);
  return log_softmax_in_loss_ ? layers + log_softmax_in_loss_record(spec_.children.back()) : layers;
}

Network::Network(LayerSpec spec, uint64_t seed, Context& ctx, NetworkOutput output, InputGradient input_gradient)
    : spec_(std::move(spec)), ctx_(ctx), param_specs_(collect_params(spec_)), buffer_specs_(collect_buffers(spec_)),
      log_softmax_in_loss_(output == NetworkOutput::LogitsForLoss && ends_in_log_softmax(spec_)) {
  param_count_ = count_elements(param_specs_);
  if (ctx.layout() == Layout::NHWC) stored_filters_ = filter_segments(param_specs_);
  buffer_count_ = count_elements(buffer_specs_);
  compute_copy_ = ctx.compute_dtype() != DType::F32;
  const size_t np = static_cast<size_t>(param_count_), nb = static_cast<size_t>(buffer_count_);
  params_.ensure(np * sizeof(float));
  grads_.ensure(np * sizeof(float));
  buffers_.ensure(nb * sizeof(float));
  if (compute_copy_) compute_params_.ensure(np * dtype_size(ctx.compute_dtype()));
  CHECK_CUDA(cudaMemsetAsync(grads_.data(), 0, np * sizeof(float), ctx.stream()));

  std::vector<float> p(np), b(nb);
  initialize_flat(param_specs_, seed, p.data());
  initialize_flat(buffer_specs_, seed, b.data());
  set_params(p);
  set_buffers(b);

  const bool input_gradient_wanted = input_gradient == InputGradient::Compute;
  if (log_softmax_in_loss_) {
    // The LogSoftmax has no parameters: the flat buffers' layout is the whole spec's either way.
    LayerSpec without_log_softmax = spec_;
    without_log_softmax.children.pop_back();
    root_ = make_network_root(without_log_softmax, ctx, input_gradient_wanted);
  } else {
    root_ = make_network_root(spec_, ctx, input_gradient_wanted);
  }
  ParamViews views;
  views.params = params();
  views.grads = grads();
  views.compute_params = compute_params();
  views.buffers = buffers();
  views.compute = ctx.compute_dtype();
  views.filters_krsc = ctx.layout() == Layout::NHWC;
  root_->bind(views);
}

const DeviceTensor& Network::backward(const DeviceTensor& dy) {
  ctx_.begin_backward();  // the previous backward's gradients are all read: its buffers are free again
  const DeviceTensor& dx = root_->backward(dy);
  ctx_.join_weight_gradients();
  return dx;
}

void Network::refresh_compute_params() {
  if (!compute_copy_ || param_count_ == 0) return;
  kernels::cast(params_.data(), DType::F32, compute_params_.data(), ctx_.compute_dtype(), param_count_, ctx_.stream());
}

void Network::set_params(const std::vector<float>& host) {
  if (static_cast<int64_t>(host.size()) != param_count_)
    fatal("Network::set_params: " + std::to_string(host.size()) + " values for " + std::to_string(param_count_) + " parameters");
  std::vector<float> stored = host;
  filters_to_krsc(stored_filters_, stored);
  CHECK_CUDA(cudaMemcpyAsync(params_.data(), stored.data(), stored.size() * sizeof(float), cudaMemcpyHostToDevice,
                             ctx_.stream()));
  refresh_compute_params();
  ctx_.synchronize();  // the host vector may go away
}

void Network::set_buffers(const std::vector<float>& host) {
  if (static_cast<int64_t>(host.size()) != buffer_count_)
    fatal("Network::set_buffers: " + std::to_string(host.size()) + " values for " + std::to_string(buffer_count_) + " buffers");
  CHECK_CUDA(cudaMemcpyAsync(buffers_.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, ctx_.stream()));
  ctx_.synchronize();
}

std::vector<float> Network::download(const DeviceBuffer& buffer, int64_t count) const {
  std::vector<float> host(static_cast<size_t>(count));
  CHECK_CUDA(cudaMemcpyAsync(host.data(), buffer.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost, ctx_.stream()));
  ctx_.synchronize();
  return host;
}

std::vector<float> Network::download_parameter_shaped(const DeviceBuffer& buffer) const {
  std::vector<float> host = download(buffer, param_count_);
  filters_to_kcrs(stored_filters_, host);
  return host;
}

std::vector<float> Network::get_params() const { return download_parameter_shaped(params_); }
std::vector<float> Network::get_grads() const { return download_parameter_shaped(grads_); }
std::vector<float> Network::get_buffers() const { return download(buffers_, buffer_count_); }

}  // namespace sb::cuda
