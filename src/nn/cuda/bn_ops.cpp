#include "nn/cuda/bn_ops.h"

#include <map>
#include <string>
#include <vector>

#include "nn/cuda/cudnn_graph_builder.h"

namespace sb::cuda {
namespace {

// Tensor uids inside the batch-norm graphs.
enum : int64_t {
  kX = 1, kY, kScale, kBias, kMean, kInvStd, kEpsilon, kMomentum,
  kRunMeanIn, kRunVarIn, kRunMeanOut, kRunVarOut, kNormOut, kDy, kDScale, kDBias, kDx, kA, kB, kScaled, kShifted
};

void* mut(const void* p) { return const_cast<void*>(p); }

std::string key_of(const char* op, const BnShape& s, const Context& ctx, bool relu) {
  return std::string(op) + "|x=" + std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" +
         std::to_string(s.w) + "|" + dtype_name(ctx.compute_dtype()) + "|" + layout_name(ctx.layout()) +
         (relu ? "|+relu" : "");
}

struct Builder {
  OpGraph og;
  const BnShape s;
  const Context& ctx;
  std::map<int64_t, int64_t> alignment;  // uid -> byte alignment of its data pointer

  Builder(const BnShape& shape, const Context& c, const std::vector<int64_t>& uids, const std::vector<void*>& ptrs)
      : s(shape), ctx(c) {
    for (size_t i = 0; i < uids.size(); ++i) alignment[uids[i]] = cudnn::alignment_of(ptrs[i]);
  }
  int64_t align(int64_t uid) const {
    const auto it = alignment.find(uid);
    return it == alignment.end() ? 16 : it->second;
  }

  const cudnn::Descriptor& activation(int64_t uid, bool is_virtual = false) {
    cudnn::TensorSpec t;
    t.uid = uid;
    t.dims = {s.n, s.c, s.h, s.w};
    t.strides = cudnn::strides_for(t.dims, ctx.layout());
    t.dtype = is_virtual ? CUDNN_DATA_FLOAT : cudnn::to_cudnn(ctx.compute_dtype());
    t.is_virtual = is_virtual;
    if (!is_virtual) t.alignment = align(uid);
    return og.arena.keep(cudnn::make_tensor(t));
  }
  const cudnn::Descriptor& per_channel(int64_t uid) {
    cudnn::TensorSpec t;
    t.uid = uid;
    t.dims = {1, s.c, 1, 1};
    t.strides = {s.c, 1, s.c, s.c};
    t.alignment = align(uid);
    return og.arena.keep(cudnn::make_tensor(t));
  }
  const cudnn::Descriptor& scalar(int64_t uid) {
    cudnn::TensorSpec t;
    t.uid = uid;
    t.dims = {1, 1, 1, 1};
    t.strides = {1, 1, 1, 1};
    t.by_value = true;
    return og.arena.keep(cudnn::make_tensor(t));
  }
  // y (or, with relu, a virtual tensor that a ReLU node turns into y) for a forward node.
  const cudnn::Descriptor& norm_output(bool relu) { return relu ? activation(kNormOut, true) : activation(kY); }

  // The tensors both forward phases share; the batch statistics (training) or the running mean and its
  // inverse std (inference) sit in mean and inv_variance.
  cudnn::NormForwardTensors norm_forward_tensors(bool relu) {
    cudnn::NormForwardTensors t;
    t.x = &activation(kX);
    t.y = &norm_output(relu);
    t.scale = &per_channel(kScale);
    t.bias = &per_channel(kBias);
    t.mean = &per_channel(kMean);
    t.inv_variance = &per_channel(kInvStd);
    return t;
  }

  // The graph of `ops`, in the order they run.
  std::optional<OpGraph> finish(std::vector<const cudnn::Descriptor*> ops, std::string* why) {
    auto graph = cudnn::make_operation_graph(ctx.cudnn(), ops, why);
    if (!graph) return std::nullopt;
    og.graph = std::move(*graph);
    og.fp32_data = ctx.compute_dtype() == DType::F32;
    return std::move(og);
  }

  // A forward NORM node made from `t`, then (with relu) the ReLU node from t.y to y.
  std::optional<OpGraph> finish_forward(cudnnBackendNormFwdPhase_t phase, const cudnn::NormForwardTensors& t,
                                        bool relu, std::string* why) {
    auto norm = cudnn::make_batchnorm_forward(phase, t, why);
    if (!norm) return std::nullopt;
    std::vector<const cudnn::Descriptor*> ops{&og.arena.keep(std::move(*norm))};
    if (relu) ops.push_back(&relu_node(*t.y));
    return finish(std::move(ops), why);
  }

  // max(in, 0) into y.
  const cudnn::Descriptor& relu_node(const cudnn::Descriptor& in) {
    const auto& y = activation(kY);
    return og.arena.keep(cudnn::make_pointwise(og.arena, CUDNN_POINTWISE_RELU_FWD, in, nullptr, y));
  }
};

}  // namespace

bool bn_forward_training_graph(Context& ctx, const BnShape& s, const BnForwardTraining& a) {
  // Device tensors, then the two by-value host scalars (which take no part in the alignment key).
  const std::vector<int64_t> uids{kX, kY, kScale, kBias, kMean, kInvStd, kRunMeanIn, kRunVarIn, kRunMeanOut,
                                  kRunVarOut, kEpsilon, kMomentum};
  const std::vector<void*> ptrs{mut(a.x), a.y, mut(a.scale), mut(a.bias), a.saved_mean, a.saved_inv_std,
                                mut(a.running_mean_in), mut(a.running_var_in), a.running_mean_out, a.running_var_out,
                                mut(a.epsilon), mut(a.momentum)};
  const std::vector<void*> device(ptrs.begin(), ptrs.end() - 2);
  const std::string key = key_of("bn_fwd_train", s, ctx, a.relu) + cudnn::alignment_key(device);
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    Builder b(s, ctx, uids, ptrs);
    cudnn::NormForwardTensors t = b.norm_forward_tensors(a.relu);
    t.epsilon = &b.scalar(kEpsilon);
    t.momentum = &b.scalar(kMomentum);
    t.in_running_mean = &b.per_channel(kRunMeanIn);
    t.in_running_var = &b.per_channel(kRunVarIn);
    t.out_running_mean = &b.per_channel(kRunMeanOut);
    t.out_running_var = &b.per_channel(kRunVarOut);
    return b.finish_forward(CUDNN_NORM_FWD_TRAINING, t, a.relu, why);
  };
  return ctx.plans().run(key, build, uids, ptrs);
}

bool bn_forward_inference_graph(Context& ctx, const BnShape& s, const BnForwardInference& a) {
  const std::vector<int64_t> uids{kX, kY, kScale, kBias, kMean, kInvStd};
  const std::vector<void*> ptrs{mut(a.x), a.y, mut(a.scale), mut(a.bias), mut(a.mean), mut(a.inv_std)};
  const std::string key = key_of("bn_fwd_infer", s, ctx, a.relu) + cudnn::alignment_key(ptrs);
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    Builder b(s, ctx, uids, ptrs);
    // eps is inside inv_std
    return b.finish_forward(CUDNN_NORM_FWD_INFERENCE, b.norm_forward_tensors(a.relu), a.relu, why);
  };
  return ctx.plans().run(key, build, uids, ptrs);
}

bool bn_backward_graph(Context& ctx, const BnShape& s, const BnBackward& a) {
  const std::vector<int64_t> uids{kX, kDy, kScale, kMean, kInvStd, kDScale, kDBias, kDx};
  const std::vector<void*> ptrs{mut(a.x), mut(a.dy), mut(a.scale), mut(a.saved_mean), mut(a.saved_inv_std),
                                a.dscale, a.dbias, a.dx};
  const std::string key = key_of("bn_bwd", s, ctx, false) + cudnn::alignment_key(ptrs);
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    Builder b(s, ctx, uids, ptrs);
    cudnn::NormBackwardTensors t;
    t.x = &b.activation(kX);
    t.dy = &b.activation(kDy);
    t.scale = &b.per_channel(kScale);
    t.mean = &b.per_channel(kMean);
    t.inv_variance = &b.per_channel(kInvStd);
    t.dscale = &b.per_channel(kDScale);
    t.dbias = &b.per_channel(kDBias);
    t.dx = &b.activation(kDx);
    auto norm = cudnn::make_batchnorm_backward(t, why);
    if (!norm) return std::nullopt;
    return b.finish({&b.og.arena.keep(std::move(*norm))}, why);
  };
  return ctx.plans().run(key, build, uids, ptrs);
}

bool bn_affine_graph(Context& ctx, const BnShape& s, const BnAffine& a) {
  const std::vector<int64_t> uids{kX, kY, kA, kB};
  const std::vector<void*> ptrs{mut(a.x), a.y, mut(a.a), mut(a.b)};
  const std::string key = key_of("bn_affine", s, ctx, a.relu) + cudnn::alignment_key(ptrs);
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    Builder b(s, ctx, uids, ptrs);
    const auto& x = b.activation(kX);
    const auto& ta = b.per_channel(kA);
    const auto& tb = b.per_channel(kB);
    const auto& scaled = b.activation(kScaled, true);
    const auto& y = a.relu ? b.activation(kShifted, true) : b.activation(kY);
    std::vector<const cudnn::Descriptor*> ops{
        &b.og.arena.keep(cudnn::make_pointwise(b.og.arena, CUDNN_POINTWISE_MUL, x, &ta, scaled)),
        &b.og.arena.keep(cudnn::make_pointwise(b.og.arena, CUDNN_POINTWISE_ADD, scaled, &tb, y))};
    if (a.relu) ops.push_back(&b.relu_node(y));
    return b.finish(std::move(ops), why);
  };
  return ctx.plans().run(key, build, uids, ptrs);
}

}  // namespace sb::cuda
