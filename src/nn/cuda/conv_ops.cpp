#include "nn/cuda/conv_ops.h"

#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "nn/cuda/cudnn_graph_builder.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {
namespace {

// Tensor uids inside the convolution graphs.
enum : int64_t {
  kX = 1, kW = 2, kY = 3, kBias = 4, kConvOut = 5,
  kScale = 6, kShift = 7, kSum = 8, kSqSum = 9, kScaled = 10, kShifted = 11, kConvIn = 12,
  // the dgrad-dReLU-dBN graph
  kBnInput = 20, kNegMean = 21, kInvStd = 22, kGamma = 23, kBeta = 24, kReluGrad = 25, kDscale = 26, kDbias = 27,
  kEqDy = 28, kEqX = 29, kEqBias = 30, kDgradOut = 31, kCentred = 32, kNormalised = 33, kGammaScaled = 34,
  kBnOut = 35, kMean = 36
};

struct ConvTensors {
  std::vector<int64_t> x, w, y;
};
ConvTensors dims_of(const ConvGeometry& g) { return {{g.n, g.c, g.h, g.w}, {g.k, g.c, g.r, g.s}, {g.n, g.k, g.p, g.q}}; }

std::string key_of(const char* op, const ConvGeometry& g, DType data, Layout layout, const std::string& extra) {
  return std::string(op) + "|x=" + std::to_string(g.n) + "x" + std::to_string(g.c) + "x" + std::to_string(g.h) + "x" +
         std::to_string(g.w) + "|w=" + std::to_string(g.k) + "x" + std::to_string(g.c) + "x" + std::to_string(g.r) +
         "x" + std::to_string(g.s) + "|pad" + std::to_string(g.pad) + "|stride" + std::to_string(g.stride) + "|" +
         dtype_name(data) + "|" + layout_name(layout) + extra;
}

// A tensor of the graph; `data` gives its alignment (null for a virtual tensor).
const cudnn::Descriptor& tensor(OpGraph& og, int64_t uid, const std::vector<int64_t>& dims, Layout layout,
                                cudnnDataType_t dtype, const void* data, bool is_virtual = false) {
  cudnn::TensorSpec s;
  s.uid = uid;
  if (data) s.alignment = cudnn::alignment_of(data);
  s.dims = dims;
  s.strides = cudnn::strides_for(dims, layout);
  s.dtype = dtype;
  s.is_virtual = is_virtual;
  return og.arena.keep(cudnn::make_tensor(s));
}

const cudnn::Descriptor& per_channel(OpGraph& og, int64_t uid, int64_t channels, cudnnDataType_t dtype,
                                     const void* data) {
  cudnn::TensorSpec s;
  s.uid = uid;
  s.alignment = cudnn::alignment_of(data);
  s.dims = {1, channels, 1, 1};
  s.strides = {channels, 1, channels, channels};
  s.dtype = dtype;
  return og.arena.keep(cudnn::make_tensor(s));
}

std::optional<OpGraph> finish(Context& ctx, OpGraph og, const std::vector<const cudnn::Descriptor*>& ops, std::string* why) {
  auto graph = cudnn::make_operation_graph(ctx.cudnn(), ops, why);
  if (!graph) return std::nullopt;
  og.graph = std::move(*graph);
  return og;
}

// The convolution's operand from x through the prologue x * a -> + b [-> relu] (fp32 arithmetic, the operand
// in the I/O dtype), its nodes appended to `ops`.
const cudnn::Descriptor& add_prologue(OpGraph& og, const ConvGeometry& g, Layout layout, cudnnDataType_t io,
                                      const cudnn::Descriptor& x, const ConvPrologue& prologue,
                                      std::vector<const cudnn::Descriptor*>& ops) {
  const std::vector<int64_t> dims = dims_of(g).x;
  const cudnnDataType_t pt = cudnn::to_cudnn(prologue.dtype);
  const auto& ta = per_channel(og, kScale, g.c, pt, prologue.a);
  const auto& tb = per_channel(og, kShift, g.c, pt, prologue.b);
  const auto& scaled = tensor(og, kScaled, dims, layout, CUDNN_DATA_FLOAT, nullptr, true);
  const auto& shifted = tensor(og, kShifted, dims, layout, prologue.relu ? CUDNN_DATA_FLOAT : io, nullptr, true);
  ops.push_back(&og.arena.keep(cudnn::make_pointwise(og.arena, CUDNN_POINTWISE_MUL, x, &ta, scaled)));
  ops.push_back(&og.arena.keep(cudnn::make_pointwise(og.arena, CUDNN_POINTWISE_ADD, scaled, &tb, shifted)));
  if (!prologue.relu) return shifted;
  const auto& activated = tensor(og, kConvIn, dims, layout, io, nullptr, true);
  ops.push_back(&og.arena.keep(cudnn::make_pointwise(og.arena, CUDNN_POINTWISE_RELU_FWD, shifted, nullptr, activated)));
  return activated;
}

// The uids and pointers of a prologue's coefficients, and its part of a plan key.
std::string add_prologue_bindings(const ConvPrologue& p, std::vector<int64_t>& uids, std::vector<void*>& ptrs) {
  uids.insert(uids.end(), {kScale, kShift});
  ptrs.insert(ptrs.end(), {const_cast<void*>(p.a), const_cast<void*>(p.b)});
  return std::string("|prologue=") + dtype_name(p.dtype) + (p.relu ? "+relu" : "");
}

}  // namespace

bool conv_forward(Context& ctx, const ConvGeometry& g, const void* x, const void* w, void* y, const float* bias) {
  const DType dt = ctx.compute_dtype();
  const Layout layout = ctx.layout();
  const bool fused = bias != nullptr;
  const std::vector<void*> ptrs = fused ? std::vector<void*>{const_cast<void*>(x), const_cast<void*>(w), y, const_cast<float*>(bias)}
                                        : std::vector<void*>{const_cast<void*>(x), const_cast<void*>(w), y};
  const std::string key = key_of("conv_fprop", g, dt, layout, (fused ? "|+bias" : "") + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    OpGraph og;
    og.fp32_data = dt == DType::F32;
    const ConvTensors d = dims_of(g);
    const cudnnDataType_t io = cudnn::to_cudnn(dt);
    const auto& tx = tensor(og, kX, d.x, layout, io, x);
    const auto& tw = tensor(og, kW, d.w, layout, io, w);
    const auto& ty = tensor(og, kY, d.y, layout, io, y);
    const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
    if (!fused) {
      const auto& op = og.arena.keep(cudnn::make_conv_fprop(tx, tw, ty, conv));
      return finish(ctx, std::move(og), {&op}, why);
    }
    // conv -> fp32 virtual tensor -> + bias[k] -> y; the caller adds the bias itself where no engine runs it
    og.has_fallback = true;
    const auto& tmid = tensor(og, kConvOut, d.y, layout, CUDNN_DATA_FLOAT, nullptr, true);
    const auto& tb = per_channel(og, kBias, g.k, CUDNN_DATA_FLOAT, bias);
    const auto& op_conv = og.arena.keep(cudnn::make_conv_fprop(tx, tw, tmid, conv));
    const auto& op_add = og.arena.keep(cudnn::make_pointwise(og.arena, CUDNN_POINTWISE_ADD, tmid, &tb, ty));
    return finish(ctx, std::move(og), {&op_conv, &op_add}, why);
  };
  if (!fused) {
    if (!ctx.plans().run(key, build, {kX, kW, kY}, ptrs)) fatal("no cuDNN engine runs the convolution " + key);
    return true;
  }
  return ctx.plans().run(key, build, {kX, kW, kY, kBias}, ptrs);
}

bool conv_forward_fused(Context& ctx, const ConvGeometry& g, const void* x, const ConvPrologue* prologue,
                        const void* w, void* y, const ConvStatistics* statistics) {
  if (!prologue && !statistics) fatal("conv_forward_fused: neither a prologue nor statistics");
  const DType dt = ctx.compute_dtype();
  const Layout layout = ctx.layout();
  std::vector<int64_t> uids{kX, kW, kY};
  std::vector<void*> ptrs{const_cast<void*>(x), const_cast<void*>(w), y};
  std::string extra;
  if (prologue) extra += add_prologue_bindings(*prologue, uids, ptrs);
  if (statistics) {
    uids.insert(uids.end(), {kSum, kSqSum});
    ptrs.insert(ptrs.end(), {statistics->sum, statistics->sqsum});
    extra += "|genstats";
  }
  const std::string key = key_of("conv_fprop", g, dt, layout, extra + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    OpGraph og;
    og.fp32_data = dt == DType::F32;
    og.has_fallback = true;
    const ConvTensors d = dims_of(g);
    const cudnnDataType_t io = cudnn::to_cudnn(dt);
    std::vector<const cudnn::Descriptor*> ops;
    const auto& tx = tensor(og, kX, d.x, layout, io, x);
    const cudnn::Descriptor* conv_in = prologue ? &add_prologue(og, g, layout, io, tx, *prologue, ops) : &tx;
    const auto& tw = tensor(og, kW, d.w, layout, io, w);
    const auto& ty = tensor(og, kY, d.y, layout, io, y);
    const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
    ops.push_back(&og.arena.keep(cudnn::make_conv_fprop(*conv_in, tw, ty, conv)));
    if (statistics) {
      const auto& tsum = per_channel(og, kSum, g.k, CUDNN_DATA_FLOAT, statistics->sum);
      const auto& tsq = per_channel(og, kSqSum, g.k, CUDNN_DATA_FLOAT, statistics->sqsum);
      auto stats = cudnn::make_genstats(ty, tsum, tsq, why);
      if (!stats) return std::nullopt;
      ops.push_back(&og.arena.keep(std::move(*stats)));
    }
    return finish(ctx, std::move(og), ops, why);
  };
  return ctx.plans().run(key, build, uids, ptrs);
}

namespace {

// The dgrad-dReLU-dBN graph of conv_backward_data_bn_relu: dgrad into an fp32 virtual tensor; the batch
// norm's output again, ((x + (-mean)) * inv_std) * gamma + beta, in the order of cuDNN's pattern; the ReLU's
// backward against it, written; the batch norm's weight gradients from that (given the mean itself).
std::optional<OpGraph> dgrad_bn_relu_graph(Context& ctx, const ConvGeometry& g, const void* dy, const void* w,
                                           const DgradBatchNorm& bn, std::string* why) {
  OpGraph og;
  og.fp32_data = ctx.compute_dtype() == DType::F32;
  og.has_fallback = true;
  const ConvTensors d = dims_of(g);
  const Layout layout = ctx.layout();
  const cudnnDataType_t io = cudnn::to_cudnn(ctx.compute_dtype());
  auto channel = [&](int64_t uid, const void* p) -> const cudnn::Descriptor& {
    return per_channel(og, uid, g.c, CUDNN_DATA_FLOAT, p);
  };
  auto inner = [&](int64_t uid) -> const cudnn::Descriptor& {
    return tensor(og, uid, d.x, layout, CUDNN_DATA_FLOAT, nullptr, true);
  };
  std::vector<const cudnn::Descriptor*> ops;
  auto pointwise = [&](cudnnPointwiseMode_t mode, const cudnn::Descriptor& a, const cudnn::Descriptor& b, int64_t out) {
    const cudnn::Descriptor& y = inner(out);
    ops.push_back(&og.arena.keep(cudnn::make_pointwise(og.arena, mode, a, &b, y)));
    return &y;
  };
  const auto& tx = tensor(og, kBnInput, d.x, layout, io, bn.bn_input);
  const auto& tmean = channel(kNegMean, bn.neg_mean);
  const auto& tinv = channel(kInvStd, bn.inv_std);
  const auto& tgamma = channel(kGamma, bn.scale);
  const auto& dz = inner(kDgradOut);
  const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
  ops.push_back(&og.arena.keep(cudnn::make_conv_dgrad(dz, tensor(og, kW, d.w, layout, io, w),
                                                      tensor(og, kY, d.y, layout, io, dy), conv, false)));
  const cudnn::Descriptor* h = pointwise(CUDNN_POINTWISE_ADD, tx, tmean, kCentred);
  h = pointwise(CUDNN_POINTWISE_MUL, *h, tinv, kNormalised);
  h = pointwise(CUDNN_POINTWISE_MUL, *h, tgamma, kGammaScaled);
  h = pointwise(CUDNN_POINTWISE_ADD, *h, channel(kBeta, bn.bias), kBnOut);
  const auto& tg = tensor(og, kReluGrad, d.x, layout, io, bn.relu_gradient);
  ops.push_back(&og.arena.keep(cudnn::make_pointwise_backward(og.arena, CUDNN_POINTWISE_RELU_BWD, dz, *h, tg)));
  cudnn::BnBackwardWeightsTensors t;
  t.x = &tx;
  t.dy = &tg;
  t.mean = &channel(kMean, bn.mean);
  t.inv_std = &tinv;
  t.scale = &tgamma;
  t.dscale = &channel(kDscale, bn.dscale);
  t.dbias = &channel(kDbias, bn.dbias);
  t.eq_dy_scale = &channel(kEqDy, bn.eq_dy_scale);
  t.eq_x_scale = &channel(kEqX, bn.eq_x_scale);
  t.eq_bias = &channel(kEqBias, bn.eq_bias);
  auto weights = cudnn::make_bn_backward_weights(t, why);
  if (!weights) return std::nullopt;
  ops.push_back(&og.arena.keep(std::move(*weights)));
  return finish(ctx, std::move(og), ops, why);
}

}  // namespace

bool conv_backward_data_bn_relu(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, const DgradBatchNorm& bn) {
  const std::vector<int64_t> uids{kY,      kW,        kBnInput, kMean,   kNegMean, kInvStd, kGamma,
                                  kBeta,   kReluGrad, kDscale,  kDbias,  kEqDy,    kEqX,    kEqBias};
  auto mut = [](const void* p) { return const_cast<void*>(p); };
  const std::vector<void*> ptrs{mut(dy),        mut(w),           mut(bn.bn_input), mut(bn.mean), mut(bn.neg_mean),
                                mut(bn.inv_std), mut(bn.scale),   mut(bn.bias),     bn.relu_gradient, bn.dscale,
                                bn.dbias,       bn.eq_dy_scale,   bn.eq_x_scale,    bn.eq_bias};
  const std::string key =
      key_of("conv_dgrad", g, ctx.compute_dtype(), ctx.layout(), "|drelu|dbn" + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) { return dgrad_bn_relu_graph(ctx, g, dy, w, bn, why); };
  return ctx.plans().run(key, build, uids, ptrs);
}

namespace {

// The dgrad graph, plain or accumulating (beta 1); false when no engine runs the accumulating one.
bool run_dgrad(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, void* dx, bool accumulate) {
  const DType dt = ctx.compute_dtype();
  const Layout layout = ctx.layout();
  const std::vector<void*> ptrs{dx, const_cast<void*>(w), const_cast<void*>(dy)};
  // beta is part of the key: a plan (and a stored choice) for one beta never serves the other. The
  // accumulating graph is searched whole ("|all-configs"; a choice stored from a narrower search is not
  // reused): the heuristics rank its fastest engines below their first eight (docs/cudnn.md).
  const std::string key =
      key_of("conv_dgrad", g, dt, layout, (accumulate ? "|beta1|all-configs" : "") + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    OpGraph og;
    og.fp32_data = dt == DType::F32;
    og.has_fallback = accumulate;  // the caller's plain dgrad and add
    og.search_every_config = accumulate;
    const ConvTensors d = dims_of(g);
    const cudnnDataType_t io = cudnn::to_cudnn(dt);
    const auto& tdx = tensor(og, kX, d.x, layout, io, dx);
    const auto& tw = tensor(og, kW, d.w, layout, io, w);
    const auto& tdy = tensor(og, kY, d.y, layout, io, dy);
    const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
    const auto& op = og.arena.keep(cudnn::make_conv_dgrad(tdx, tw, tdy, conv, accumulate));
    return finish(ctx, std::move(og), {&op}, why);
  };
  if (!accumulate) {
    if (!ctx.plans().run(key, build, {kX, kW, kY}, ptrs)) fatal("no cuDNN engine runs the convolution " + key);
    return true;
  }
  if (ctx.plans().has(key)) return ctx.plans().run(key, build, {kX, kW, kY}, ptrs);
  // First use: the search times each candidate on the real tensors, and with beta 1 every execution adds
  // into dx again. Keep the prior dx aside, let the search run, put it back and run the chosen plan once.
  // (First use never happens inside a graph capture: the plan cache refuses that.)
  const size_t bytes = static_cast<size_t>(g.n * g.c * g.h * g.w) * dtype_size(dt);
  DeviceBuffer prior;
  void* saved = prior.ensure(bytes);
  CHECK_CUDA(cudaMemcpyAsync(saved, dx, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  const bool ok = ctx.plans().run(key, build, {kX, kW, kY}, ptrs);
  CHECK_CUDA(cudaMemcpyAsync(dx, saved, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
  const bool ran = ok && ctx.plans().run(key, build, {kX, kW, kY}, ptrs);
  CHECK_CUDA(cudaStreamSynchronize(ctx.stream()));  // before `prior` is freed
  return ran;
}

}  // namespace

void conv_backward_data(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, void* dx) {
  run_dgrad(ctx, g, dy, w, dx, false);
}

bool conv_backward_data_accumulate(Context& ctx, const ConvGeometry& g, const void* dy, const void* w, void* dx) {
  return run_dgrad(ctx, g, dy, w, dx, true);
}

bool conv_backward_filter_fused(Context& ctx, const ConvGeometry& g, const void* x, const ConvPrologue& prologue,
                                const void* dy, void* dw, DType dw_dtype, cudaStream_t stream) {
  const DType dt = ctx.compute_dtype();
  const Layout layout = ctx.layout();
  std::vector<int64_t> uids{kX, kW, kY};
  std::vector<void*> ptrs{const_cast<void*>(x), dw, const_cast<void*>(dy)};
  const std::string extra = std::string("|dw=") + dtype_name(dw_dtype) + add_prologue_bindings(prologue, uids, ptrs);
  const std::string key = key_of("conv_wgrad", g, dt, layout, extra + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    OpGraph og;
    og.fp32_data = dt == DType::F32 && dw_dtype == DType::F32;
    og.has_fallback = true;
    const ConvTensors d = dims_of(g);
    const cudnnDataType_t io = cudnn::to_cudnn(dt);
    std::vector<const cudnn::Descriptor*> ops;
    const auto& tx = add_prologue(og, g, layout, io, tensor(og, kX, d.x, layout, io, x), prologue, ops);
    const auto& tdw = tensor(og, kW, d.w, layout, cudnn::to_cudnn(dw_dtype), dw);
    const auto& tdy = tensor(og, kY, d.y, layout, io, dy);
    const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
    ops.push_back(&og.arena.keep(cudnn::make_conv_wgrad(tx, tdw, tdy, conv)));
    return finish(ctx, std::move(og), ops, why);
  };
  const PlanLane lane = ctx.plan_lane_for(stream);
  return ctx.plans().run(key, build, uids, ptrs, &lane);
}

void conv_backward_filter(Context& ctx, const ConvGeometry& g, const void* x, const void* dy, void* dw, DType dw_dtype,
                          cudaStream_t stream) {
  const DType dt = ctx.compute_dtype();
  const Layout layout = ctx.layout();
  const std::vector<void*> ptrs{const_cast<void*>(x), dw, const_cast<void*>(dy)};
  const std::string key =
      key_of("conv_wgrad", g, dt, layout, std::string("|dw=") + dtype_name(dw_dtype) + cudnn::alignment_key(ptrs));
  auto build = [&](std::string* why) -> std::optional<OpGraph> {
    OpGraph og;
    og.fp32_data = dt == DType::F32 && dw_dtype == DType::F32;
    const ConvTensors d = dims_of(g);
    const cudnnDataType_t io = cudnn::to_cudnn(dt);
    const auto& tx = tensor(og, kX, d.x, layout, io, x);
    const auto& tdw = tensor(og, kW, d.w, layout, cudnn::to_cudnn(dw_dtype), dw);
    const auto& tdy = tensor(og, kY, d.y, layout, io, dy);
    const auto& conv = og.arena.keep(cudnn::make_convolution(g.pad, g.stride, CUDNN_DATA_FLOAT));
    const auto& op = og.arena.keep(cudnn::make_conv_wgrad(tx, tdw, tdy, conv));
    return finish(ctx, std::move(og), {&op}, why);
  };
  const PlanLane lane = ctx.plan_lane_for(stream);
  if (!ctx.plans().run(key, build, {kX, kW, kY}, ptrs, &lane))
    fatal("no cuDNN engine runs the convolution " + key);
}

}  // namespace sb::cuda
