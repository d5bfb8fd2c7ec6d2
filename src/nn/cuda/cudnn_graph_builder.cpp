#include "nn/cuda/cudnn_graph_builder.h"

#include <algorithm>

#include "core/cuda_check.h"
#include "core/error.h"

// The handle attributes of the operation graph and the execution plan are marked deprecated in cuDNN
// 9.x (device properties are the new way) but they remain the documented way to bind a handle, and the
// newer attributes are not in every 9.x we build against.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace sb::cuda::cudnn {

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) { CHECK_CUDNN(cudnnBackendCreateDescriptor(type, &desc_)); }

Descriptor::~Descriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);  // nothing useful to do on failure in a destructor
}

Descriptor& Descriptor::operator=(Descriptor&& o) noexcept {
  if (this != &o) {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
    desc_ = o.desc_;
    o.desc_ = nullptr;
  }
  return *this;
}

Descriptor& Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* values) {
  CHECK_CUDNN(cudnnBackendSetAttribute(desc_, name, type, count, values));
  return *this;
}
Descriptor& Descriptor::set_int64(cudnnBackendAttributeName_t name, int64_t value) {
  return set(name, CUDNN_TYPE_INT64, 1, &value);
}
Descriptor& Descriptor::set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}
Descriptor& Descriptor::set_bool(cudnnBackendAttributeName_t name, bool value) {
  return set(name, CUDNN_TYPE_BOOLEAN, 1, &value);
}
Descriptor& Descriptor::set_float(cudnnBackendAttributeName_t name, float value) {
  return set(name, CUDNN_TYPE_FLOAT, 1, &value);
}
Descriptor& Descriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
  return set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}
Descriptor& Descriptor::set_desc(cudnnBackendAttributeName_t name, const Descriptor& value) {
  cudnnBackendDescriptor_t raw = value.get();
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}
Descriptor& Descriptor::set_descs(cudnnBackendAttributeName_t name, const std::vector<const Descriptor*>& values) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(values.size());
  for (const Descriptor* d : values) raw.push_back(d->get());
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()), raw.data());
}
Descriptor& Descriptor::set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t handle) {
  return set(name, CUDNN_TYPE_HANDLE, 1, &handle);
}

void Descriptor::finalize() { CHECK_CUDNN(cudnnBackendFinalize(desc_)); }
cudnnStatus_t Descriptor::try_finalize() { return cudnnBackendFinalize(desc_); }

cudnnDataType_t to_cudnn(DType t) {
  switch (t) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
  }
  fatal("to_cudnn: unknown dtype");
}

Descriptor make_tensor(const TensorSpec& s) {
  Descriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, s.dtype)
      .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, s.dims)
      .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, s.strides)
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, s.uid)
      .set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, s.alignment);
  if (s.is_virtual) d.set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, true);
  if (s.by_value) d.set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true);
  d.finalize();
  return d;
}

int64_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t a = 1;
  while (a < 16 && address % static_cast<uintptr_t>(2 * a) == 0) a *= 2;
  return a;
}

std::string alignment_key(const std::vector<void*>& pointers) {
  std::string s;
  bool all_aligned = true;
  for (const void* p : pointers) {
    const int64_t a = alignment_of(p);
    all_aligned = all_aligned && a == 16;
    if (!s.empty()) s += ',';
    s += std::to_string(a);
  }
  return all_aligned ? "" : "|align=" + s;
}

std::vector<int64_t> strides_for(const std::vector<int64_t>& d, Layout layout) {
  if (d.size() != 4) fatal("strides_for: expects 4 dims in NCHW order");
  const int64_t c = d[1], h = d[2], w = d[3];
  if (layout == Layout::NCHW) return {c * h * w, h * w, w, 1};
  return {h * w * c, 1, w * c, c};  // NHWC: channels innermost
}

Descriptor make_convolution(int64_t pad, int64_t stride, cudnnDataType_t compute_type) {
  Descriptor d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  d.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2)
      .set_data_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, compute_type)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {pad, pad})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {pad, pad})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {stride, stride})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1});
  d.finalize();
  return d;
}

// alpha = 1 and beta = 0 (beta 1 for an accumulating dgrad) as floats: the compute type is float for every
// data type we use.
Descriptor make_conv_fprop(const Descriptor& x, const Descriptor& w, const Descriptor& y, const Descriptor& conv) {
  Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  d.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f);
  d.finalize();
  return d;
}

Descriptor make_conv_dgrad(const Descriptor& dx, const Descriptor& w, const Descriptor& dy, const Descriptor& conv,
                           bool accumulate) {
  Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  d.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, dx)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, dy)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 1.0f)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, accumulate ? 1.0f : 0.0f);
  d.finalize();
  return d;
}

Descriptor make_conv_wgrad(const Descriptor& x, const Descriptor& dw, const Descriptor& dy, const Descriptor& conv) {
  Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
  d.set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, dw)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, dy)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 1.0f)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 0.0f);
  d.finalize();
  return d;
}

namespace {
// A pointwise mode descriptor, kept in the arena: fp32 arithmetic inside fusions.
const Descriptor& pointwise_mode(Arena& arena, cudnnPointwiseMode_t mode) {
  Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  pw.finalize();
  return arena.keep(std::move(pw));
}
}  // namespace

Descriptor make_pointwise(Arena& arena, cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b, const Descriptor& y) {
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pointwise_mode(arena, mode))
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.finalize();
  return op;
}

Descriptor make_pointwise_backward(Arena& arena, cudnnPointwiseMode_t mode, const Descriptor& dy, const Descriptor& x,
                                   const Descriptor& dx) {
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pointwise_mode(arena, mode))
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, dy)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, dx);
  op.finalize();
  return op;
}

namespace {
void require(const Descriptor* d, const char* what) {
  if (!d) fatal(std::string("batch-norm graph: missing tensor ") + what);
}

std::optional<Descriptor> finalized(Descriptor d, std::string* why) {
  const cudnnStatus_t status = d.try_finalize();
  if (status == CUDNN_STATUS_SUCCESS) return d;
  if (why) *why = std::string(cudnnGetErrorString(status)) + " " + last_error();
  return std::nullopt;
}
}  // namespace

std::optional<Descriptor> make_batchnorm_forward(cudnnBackendNormFwdPhase_t phase, const NormForwardTensors& t,
                                                 std::string* why) {
  require(t.x, "x"); require(t.y, "y"); require(t.scale, "scale"); require(t.bias, "bias");
  require(t.mean, "mean"); require(t.inv_variance, "inv_variance");
  Descriptor d(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = CUDNN_BATCH_NORM;
  d.set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode)
      .set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, *t.x)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, *t.y)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, *t.scale)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, *t.bias)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, *t.mean)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, *t.inv_variance);
  if (t.epsilon) d.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, *t.epsilon);
  if (t.in_running_mean) {
    require(t.momentum, "momentum"); require(t.in_running_var, "in_running_var");
    require(t.out_running_mean, "out_running_mean"); require(t.out_running_var, "out_running_var");
    d.set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, *t.momentum)
        .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC, *t.in_running_mean)
        .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC, *t.in_running_var)
        .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC, *t.out_running_mean)
        .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC, *t.out_running_var);
  }
  return finalized(std::move(d), why);
}

std::optional<Descriptor> make_genstats(const Descriptor& x, const Descriptor& sum, const Descriptor& sqsum,
                                        std::string* why) {
  Descriptor d(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
  const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
  d.set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode)
      .set_data_type(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_DATA_FLOAT)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, sum)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, sqsum);
  return finalized(std::move(d), why);
}

std::optional<Descriptor> make_bn_backward_weights(const BnBackwardWeightsTensors& t, std::string* why) {
  for (const Descriptor* d : {t.x, t.dy, t.mean, t.inv_std, t.scale, t.dscale, t.dbias, t.eq_dy_scale, t.eq_x_scale, t.eq_bias})
    require(d, "of the batch-norm weight gradients");
  Descriptor d(CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR);
  d.set_data_type(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC, CUDNN_DATA_FLOAT)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, *t.mean)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, *t.inv_std)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, *t.scale)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, *t.x)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, *t.dy)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC, *t.dscale)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC, *t.dbias)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC, *t.eq_dy_scale)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC, *t.eq_x_scale)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS, *t.eq_bias);
  return finalized(std::move(d), why);
}

std::optional<Descriptor> make_batchnorm_backward(const NormBackwardTensors& t, std::string* why) {
  require(t.x, "x"); require(t.dy, "dy"); require(t.scale, "scale"); require(t.mean, "mean");
  require(t.inv_variance, "inv_variance"); require(t.dscale, "dscale"); require(t.dbias, "dbias"); require(t.dx, "dx");
  Descriptor d(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = CUDNN_BATCH_NORM;
  d.set(CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, *t.x)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, *t.dy)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, *t.scale)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, *t.mean)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, *t.inv_variance)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, *t.dscale)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, *t.dbias)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, *t.dx);
  return finalized(std::move(d), why);
}

std::optional<Descriptor> make_operation_graph(cudnnHandle_t handle, const std::vector<const Descriptor*>& ops,
                                               std::string* why) {
  Descriptor g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g.set_descs(CUDNN_ATTR_OPERATIONGRAPH_OPS, ops).set_handle(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle);
  const cudnnStatus_t status = g.try_finalize();
  if (status != CUDNN_STATUS_SUCCESS) {
    if (why) *why = std::string(cudnnGetErrorString(status)) + " " + last_error();
    return std::nullopt;
  }
  return g;
}

namespace {
// The descriptors an attribute holds (heuristics results, knob choices): cuDNN fills descriptors of
// `type` that the caller creates, after saying how many there are.
std::vector<Descriptor> held_descriptors(const Descriptor& d, cudnnBackendAttributeName_t name,
                                         cudnnBackendDescriptorType_t type) {
  int64_t count = 0;
  CHECK_CUDNN(cudnnBackendGetAttribute(d.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<Descriptor> held;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    held.emplace_back(type);
    raw.push_back(held.back().get());
  }
  int64_t returned = 0;
  if (count > 0) CHECK_CUDNN(cudnnBackendGetAttribute(d.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()));
  held.resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  return held;
}
}  // namespace

std::vector<Descriptor> heuristic_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph).set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) return {};  // no heuristics for this graph
  return held_descriptors(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
}

bool EngineInfo::has(cudnnBackendNumericalNote_t note) const {
  for (auto n : numerical_notes)
    if (n == note) return true;
  return false;
}
bool EngineInfo::has(cudnnBackendBehaviorNote_t note) const {
  for (auto n : behavior_notes)
    if (n == note) return true;
  return false;
}
std::string EngineInfo::str() const {
  static const char* const numerical[] = {"tensor_core", "down_convert", "reduced_precision", "fft", "nondet",
                                          "winograd", "winograd4x4", "winograd6x6", "winograd13x13", "strict_nan"};
  static const char* const behavior[] = {"rtc", "int8x32_filter", "int8x32_bias", "cuda_graph_api", "cublaslt"};
  std::string s = "eng" + std::to_string(global_index) + " [";
  for (size_t i = 0; i < numerical_notes.size(); ++i) {
    const int n = numerical_notes[i];
    if (i) s += ',';
    s += n >= 0 && n < 10 ? numerical[n] : "?";
  }
  s += "] [";
  for (size_t i = 0; i < behavior_notes.size(); ++i) {
    const int n = behavior_notes[i];
    if (i) s += ',';
    s += n >= 0 && n < 5 ? behavior[n] : "?";
  }
  return s + "]";
}

EngineInfo engine_info(const Descriptor& config) {
  EngineInfo info;
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t n = 0;
  CHECK_CUDNN(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw));
  CHECK_CUDNN(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                       &info.global_index));
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  CHECK_CUDNN(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
  info.numerical_notes.assign(notes, notes + n);
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  CHECK_CUDNN(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                       CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, behavior));
  info.behavior_notes.assign(behavior, behavior + n);
  return info;
}

std::optional<Descriptor> make_plan(cudnnHandle_t handle, const Descriptor& config) {
  Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan.set_handle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle).set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  if (plan.try_finalize() != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return plan;
}

PlanChoice engine_choice(const Descriptor& config) {
  PlanChoice choice;
  choice.engine = engine_info(config).global_index;
  for (const Descriptor& knob : held_descriptors(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0, n = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(knob.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
    CHECK_CUDNN(cudnnBackendGetAttribute(knob.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value));
    choice.knobs.push_back({static_cast<int64_t>(type), value});
  }
  return choice;
}

namespace {
// A setter for values read from a file: cuDNN may reject them, which is an answer, not a fault.
bool try_set(const Descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
             const void* values) {
  return cudnnBackendSetAttribute(d.get(), name, type, count, values) == CUDNN_STATUS_SUCCESS;
}
}  // namespace

std::optional<EngineConfig> make_engine_config(const Descriptor& graph, const PlanChoice& choice) {
  if (choice.engine < 0) return std::nullopt;
  EngineConfig c{Descriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR), {}, Descriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)};
  const cudnnBackendDescriptor_t raw_graph = graph.get();
  if (!try_set(c.engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw_graph) ||
      !try_set(c.engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &choice.engine) ||
      c.engine.try_finalize() != CUDNN_STATUS_SUCCESS)
    return std::nullopt;
  std::vector<cudnnBackendDescriptor_t> raw_knobs;
  for (const PlanKnob& k : choice.knobs) {
    if (k.type < 0 || k.type >= CUDNN_KNOB_TYPE_COUNTS) return std::nullopt;
    const auto type = static_cast<cudnnBackendKnobType_t>(k.type);
    Descriptor& knob = c.knobs.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    if (!try_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type) ||
        !try_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &k.value) ||
        knob.try_finalize() != CUDNN_STATUS_SUCCESS)
      return std::nullopt;
    raw_knobs.push_back(knob.get());
  }
  const cudnnBackendDescriptor_t raw_engine = c.engine.get();
  if (!try_set(c.config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw_engine)) return std::nullopt;
  if (!raw_knobs.empty() && !try_set(c.config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                     static_cast<int64_t>(raw_knobs.size()), raw_knobs.data()))
    return std::nullopt;
  if (c.config.try_finalize() != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return c;
}

std::string plan_json(const Descriptor& plan) {
  int64_t count = 0;
  if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return "";
  std::string text(static_cast<size_t>(count), '\0');
  if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, count, &count,
                               text.data()) != CUDNN_STATUS_SUCCESS)
    return "";
  text.resize(std::min(text.size(), static_cast<size_t>(std::max<int64_t>(count, 0))));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::optional<Descriptor> plan_from_json(cudnnHandle_t handle, const std::string& json) {
  if (json.empty()) return std::nullopt;
  Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan.set_handle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle);
  if (!try_set(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, static_cast<int64_t>(json.size()),
               json.data()) ||
      plan.try_finalize() != CUDNN_STATUS_SUCCESS)
    return std::nullopt;
  return plan;
}

int64_t plan_workspace_bytes(const Descriptor& plan) {
  int64_t bytes = 0, n = 0;
  CHECK_CUDNN(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &bytes));
  return bytes;
}

Descriptor make_variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& pointers, void* workspace) {
  if (uids.size() != pointers.size()) fatal("make_variant_pack: uids and pointers differ in length");
  Descriptor vp(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  vp.set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()), pointers.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  vp.finalize();
  return vp;
}

cudnnStatus_t execute(cudnnHandle_t handle, const Descriptor& plan, const Descriptor& variant_pack) {
  return cudnnBackendExecute(handle, plan.get(), variant_pack.get());
}

std::string last_error() {
  char message[1024] = {0};
  cudnnGetLastErrorString(message, sizeof(message));
  return message;
}

}  // namespace sb::cuda::cudnn
