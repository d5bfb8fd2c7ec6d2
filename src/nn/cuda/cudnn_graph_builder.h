// A small RAII builder over cuDNN's backend (graph) API of <cudnn_graph.h>: tensors, convolution and
// pointwise descriptors, operation nodes (conv fprop/dgrad/wgrad, pointwise, batch-norm forward and
// backward), operation graphs, heuristics, execution plans and variant packs. Named apart from cuDNN's
// header so that no include can pick the wrong one.
//
// Every descriptor is owned by a move-only Descriptor. Builders finalize what they make and stop the job
// on a failed call, except where failure is a normal answer ("no engine supports this graph"): those
// return a status or an empty optional so that the caller can try something else.
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "nn/plan_store.h"

namespace sb::cuda::cudnn {

class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  ~Descriptor();
  Descriptor(Descriptor&& o) noexcept : desc_(o.desc_) { o.desc_ = nullptr; }
  Descriptor& operator=(Descriptor&& o) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  explicit operator bool() const { return desc_ != nullptr; }

  // Typed setters; each stops the job if cuDNN rejects the attribute.
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                  const void* values);
  Descriptor& set_int64(cudnnBackendAttributeName_t name, int64_t value);
  Descriptor& set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
  Descriptor& set_bool(cudnnBackendAttributeName_t name, bool value);
  Descriptor& set_float(cudnnBackendAttributeName_t name, float value);
  Descriptor& set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value);
  Descriptor& set_desc(cudnnBackendAttributeName_t name, const Descriptor& value);
  Descriptor& set_descs(cudnnBackendAttributeName_t name, const std::vector<const Descriptor*>& values);
  Descriptor& set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t handle);

  void finalize();                      // stops the job on failure
  cudnnStatus_t try_finalize();         // for descriptors that may legitimately be unsupported

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// Owns every descriptor a graph refers to (tensors, operations, mode descriptors), so that nothing an
// operation graph or plan points at is destroyed while they live. References stay valid (a deque).
class Arena {
 public:
  const Descriptor& keep(Descriptor d) { return items_.emplace_back(std::move(d)); }

 private:
  std::deque<Descriptor> items_;
};

cudnnDataType_t to_cudnn(DType t);

// A tensor as cuDNN sees it. dims are logical NCHW (or [1,C,1,1] for per-channel tensors); strides
// describe the memory layout.
struct TensorSpec {
  int64_t uid = 0;
  std::vector<int64_t> dims, strides;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int64_t alignment = 16;     // bytes the data pointer is aligned to (alignment_of), at most 16
  bool is_virtual = false;    // an intermediate that lives inside a fused graph only
  bool by_value = false;      // a host scalar passed through the variant pack (epsilon, momentum)
};
Descriptor make_tensor(const TensorSpec& spec);

// The byte alignment of a pointer, up to 16 (what CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT describes). Views into
// the flat parameter buffers can be less aligned than a cudaMalloc block.
int64_t alignment_of(const void* p);
// "" when every pointer is 16-byte aligned, else "|align=16,4,..." for a plan-cache key.
std::string alignment_key(const std::vector<void*>& pointers);

// Strides of a dense 4-d tensor whose dims are given in NCHW order, stored in the given layout.
std::vector<int64_t> strides_for(const std::vector<int64_t>& nchw_dims, Layout layout);

// Cross-correlation (what deep learning calls convolution) over 2 spatial dims.
Descriptor make_convolution(int64_t pad, int64_t stride, cudnnDataType_t compute_type);

Descriptor make_conv_fprop(const Descriptor& x, const Descriptor& w, const Descriptor& y, const Descriptor& conv);
// dx = dgrad(dy, w), or dx += dgrad(dy, w) with `accumulate` (beta 1: the epilogue reads the prior dx).
Descriptor make_conv_dgrad(const Descriptor& dx, const Descriptor& w, const Descriptor& dy, const Descriptor& conv,
                           bool accumulate);
Descriptor make_conv_wgrad(const Descriptor& x, const Descriptor& dw, const Descriptor& dy, const Descriptor& conv);

// y = op(x) for unary modes, y = op(x, b) for binary ones (b may be null for unary modes). The mode
// descriptor is kept in the arena.
Descriptor make_pointwise(Arena& arena, cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b, const Descriptor& y);

// sum[k] and sqsum[k] of x over n, h and w (cuDNN's genstats, fp32 [1,K,1,1] outputs): a convolution's
// epilogue can write the statistics of its own output for the batch norm that follows. Empty, with the
// reason, when cuDNN rejects the node.
std::optional<Descriptor> make_genstats(const Descriptor& x, const Descriptor& sum, const Descriptor& sqsum,
                                        std::string* why);

// The batch norm's weight gradients from the gradient at its output (cuDNN's BN_BWD_WEIGHTS, the last node
// of the dgrad-dReLU-dBN pattern): dscale, dbias, and the per-channel coefficients of its input gradient,
// dx = eq_dy_scale * dy + eq_x_scale * x + eq_bias. All per-channel tensors fp32 [1,C,1,1].
struct BnBackwardWeightsTensors {
  const Descriptor* x = nullptr;
  const Descriptor* dy = nullptr;
  const Descriptor* mean = nullptr;
  const Descriptor* inv_std = nullptr;
  const Descriptor* scale = nullptr;
  const Descriptor* dscale = nullptr;
  const Descriptor* dbias = nullptr;
  const Descriptor* eq_dy_scale = nullptr;
  const Descriptor* eq_x_scale = nullptr;
  const Descriptor* eq_bias = nullptr;
};
std::optional<Descriptor> make_bn_backward_weights(const BnBackwardWeightsTensors& t, std::string* why);

// dx = the backward of a pointwise mode (RELU_BWD, ...) given the forward's input x and the gradient dy.
Descriptor make_pointwise_backward(Arena& arena, cudnnPointwiseMode_t mode, const Descriptor& dy, const Descriptor& x,
                                   const Descriptor& dx);

// Batch-norm forward. Training writes y, the saved mean and inverse std-dev, and the next running
// statistics; inference reads mean and inv_variance and writes y.
struct NormForwardTensors {
  const Descriptor* x = nullptr;
  const Descriptor* y = nullptr;
  const Descriptor* scale = nullptr;
  const Descriptor* bias = nullptr;
  const Descriptor* mean = nullptr;          // saved mean (training: output; inference: input)
  const Descriptor* inv_variance = nullptr;  // saved 1/sqrt(var+eps) (training: output; inference: input)
  const Descriptor* epsilon = nullptr;       // by-value scalar (training; inference takes inv_variance)
  const Descriptor* momentum = nullptr;      // by-value scalar (training with running stats)
  const Descriptor* in_running_mean = nullptr;
  const Descriptor* in_running_var = nullptr;
  const Descriptor* out_running_mean = nullptr;
  const Descriptor* out_running_var = nullptr;
};
// Empty (with the reason) when cuDNN rejects the node.
std::optional<Descriptor> make_batchnorm_forward(cudnnBackendNormFwdPhase_t phase, const NormForwardTensors& t,
                                                 std::string* why);

struct NormBackwardTensors {
  const Descriptor* x = nullptr;
  const Descriptor* dy = nullptr;
  const Descriptor* scale = nullptr;
  const Descriptor* mean = nullptr;
  const Descriptor* inv_variance = nullptr;
  const Descriptor* dscale = nullptr;
  const Descriptor* dbias = nullptr;
  const Descriptor* dx = nullptr;
};
std::optional<Descriptor> make_batchnorm_backward(const NormBackwardTensors& t, std::string* why);

// An operation graph over finalized operation nodes. Returns an empty optional when cuDNN rejects the
// combination (e.g. a fusion it cannot express).
std::optional<Descriptor> make_operation_graph(cudnnHandle_t handle, const std::vector<const Descriptor*>& ops,
                                               std::string* why = nullptr);

// The engine configurations the heuristics propose for a graph, best first. Empty when none apply.
std::vector<Descriptor> heuristic_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode);

// What an engine configuration is: its engine's global index and numerical/behaviour notes.
struct EngineInfo {
  int64_t global_index = -1;
  std::vector<cudnnBackendNumericalNote_t> numerical_notes;
  std::vector<cudnnBackendBehaviorNote_t> behavior_notes;
  bool has(cudnnBackendNumericalNote_t note) const;
  bool has(cudnnBackendBehaviorNote_t note) const;
  std::string str() const;  // e.g. "eng12 [tensor_core,nondet] [rtc]"
};
EngineInfo engine_info(const Descriptor& engine_config);

// An engine configuration by name: its engine's global index and knob choices (what the plan cache stores
// and the ranks agree on, rather than a position in one process's heuristics list).
PlanChoice engine_choice(const Descriptor& engine_config);

// An engine configuration rebuilt from a choice for a graph, with the descriptors it refers to. Empty when
// this cuDNN does not accept the choice for the graph (another version, a damaged cache entry).
struct EngineConfig {
  Descriptor engine;
  std::vector<Descriptor> knobs;
  Descriptor config;
};
std::optional<EngineConfig> make_engine_config(const Descriptor& graph, const PlanChoice& choice);

// An execution plan for one engine configuration; empty when the configuration cannot run this graph.
std::optional<Descriptor> make_plan(cudnnHandle_t handle, const Descriptor& engine_config);
int64_t plan_workspace_bytes(const Descriptor& plan);

// cuDNN's serialised form of a plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION); empty when the plan's
// engine cannot be serialised. Only runtime-compiled engines can, and only for the same GPU and cuDNN.
std::string plan_json(const Descriptor& plan);
// A plan restored from plan_json's text; empty when cuDNN refuses it.
std::optional<Descriptor> plan_from_json(cudnnHandle_t handle, const std::string& json);

// The uid -> device pointer binding of one execution, plus the workspace.
Descriptor make_variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& pointers, void* workspace);

cudnnStatus_t execute(cudnnHandle_t handle, const Descriptor& plan, const Descriptor& variant_pack);

// cuDNN's text for the last error on this thread (empty when it has none).
std::string last_error();

}  // namespace sb::cuda::cudnn
