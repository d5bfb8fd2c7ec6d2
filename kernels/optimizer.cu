// The fused optimizer step (see optimizer.h). One grid-stride pass over the flat buffers: each thread
// loads 4 consecutive elements of params, grads and the state buffers as 16-byte words, applies the
// shared per-element rule of src/maths/optimizer_update_rules.h in registers, and stores params, state and the
// optional low-precision weight copy. Bytes per element: Adam reads 16 and writes 12 (+2 for the copy).
#include "kernels/optimizer.h"

#include "kernels/device_utils.cuh"
#include "maths/optimizer_update_rules.h"

namespace sb::kernels {
namespace {
using namespace detail;

// The step scalars come from optimizer_update_rules.h's *_step_scalars, computed on the device from the plain
// hyper-parameters: a graph-captured step reads lr and the step number from device memory.
struct Scalars {
  SgdStep sgd;
  AdadeltaStep adadelta;
  AdamStep adam;
};

// ---- the rules: how many state buffers, and which shared update function ----
struct SgdPlainRule {
  static constexpr int kStates = 0;
  __device__ static void apply(float& p, float g, float*, const Scalars& s) { sgd_update(p, g, s.sgd); }
};
struct SgdMomentumRule {
  static constexpr int kStates = 1;
  __device__ static void apply(float& p, float g, float* st, const Scalars& s) {
    sgd_momentum_update(p, g, st[0], s.sgd);
  }
};
struct AdadeltaRule {
  static constexpr int kStates = 2;
  __device__ static void apply(float& p, float g, float* st, const Scalars& s) {
    adadelta_update(p, g, st[0], st[1], s.adadelta);
  }
};
struct AdamRule {
  static constexpr int kStates = 2;
  __device__ static void apply(float& p, float g, float* st, const Scalars& s) {
    adam_update(p, g, st[0], st[1], s.adam);
  }
};
struct AdamAmsgradRule {
  static constexpr int kStates = 3;
  __device__ static void apply(float& p, float g, float* st, const Scalars& s) {
    adam_amsgrad_update(p, g, st[0], st[1], st[2], s.adam);
  }
};

struct NoCopy {};  // TC = NoCopy: no low-precision copy

template <typename Rule, typename TC>
__device__ __forceinline__ void update_one(const FusedOptimizerArgs& a, int64_t i, float inv_scale,
                                           const Scalars& s) {
  float st[Rule::kStates > 0 ? Rule::kStates : 1];
#pragma unroll
  for (int k = 0; k < Rule::kStates; ++k) st[k] = a.state[k][i];
  float p = a.params[i];
  Rule::apply(p, a.grads[i] * inv_scale, st, s);
  a.params[i] = p;
#pragma unroll
  for (int k = 0; k < Rule::kStates; ++k) a.state[k][i] = st[k];
  if constexpr (!std::is_same_v<TC, NoCopy>) static_cast<TC*>(a.params_copy)[i] = from_float<TC>(p);
}

// Thread 0's part of the step, before the block's barrier: whether the step is skipped (an inf or NaN in the
// gradients), the step number, the rule's scalars and the loss scale's reciprocal, into the block's shared
// memory, so that the block reads each device scalar once.
__device__ __forceinline__ void read_step(const FusedOptimizerArgs& a, Scalars& scalars, bool& skip, int64_t& step,
                                          float& inv_scale) {
  skip = a.found_inf != nullptr && *a.found_inf != 0;
  step = a.step_counter ? a.step_counter->steps + 1 : a.step;
  const double lr = a.lr_device ? *a.lr_device : a.lr;
  scalars.sgd = sgd_step_scalars(a.sgd, lr, step);
  scalars.adadelta = adadelta_step_scalars(a.adadelta, lr);
  scalars.adam = adam_step_scalars(a.adam, lr, step);
  // torch's unscale: the reciprocal in double, rounded to fp32, then one multiply per gradient.
  inv_scale = a.loss_scale ? static_cast<float>(1.0 / static_cast<double>(*a.loss_scale)) : 1.0f;
}

// The thread's quads, grid-stride: 4 elements of every buffer as one 16-byte word, each element through the
// rule in registers, then params, state and the optional copy stored back. The whole loop is one step so
// that the compiler unrolls it as it did inside the kernel.
template <typename Rule, typename TC>
__device__ __forceinline__ void update_quads(const FusedOptimizerArgs& a, int64_t quads, int64_t stride, float inv,
                                             const Scalars& s) {
  for (int64_t q = global_thread(); q < quads; q += stride) {
    float4 p4 = reinterpret_cast<const float4*>(a.params)[q];
    const float4 g4 = reinterpret_cast<const float4*>(a.grads)[q];
    float4 st4[Rule::kStates > 0 ? Rule::kStates : 1];
#pragma unroll
    for (int k = 0; k < Rule::kStates; ++k) st4[k] = reinterpret_cast<const float4*>(a.state[k])[q];
    float* p = &p4.x;
    const float* g = &g4.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float st[Rule::kStates > 0 ? Rule::kStates : 1];
#pragma unroll
      for (int k = 0; k < Rule::kStates; ++k) st[k] = (&st4[k].x)[j];
      Rule::apply(p[j], g[j] * inv, st, s);
#pragma unroll
      for (int k = 0; k < Rule::kStates; ++k) (&st4[k].x)[j] = st[k];
    }
    reinterpret_cast<float4*>(a.params)[q] = p4;
#pragma unroll
    for (int k = 0; k < Rule::kStates; ++k) reinterpret_cast<float4*>(a.state[k])[q] = st4[k];
    if constexpr (!std::is_same_v<TC, NoCopy>) {
      Pack<TC, 4> c;  // 8 bytes: the copy pointer is 16-byte aligned, so 8-byte stores are too
#pragma unroll
      for (int j = 0; j < 4; ++j) c.v[j] = from_float<TC>(p[j]);
      reinterpret_cast<uint2*>(a.params_copy)[q] = *reinterpret_cast<const uint2*>(&c);
    }
  }
}

// The last block to finish advances the step counter. Every block read it (thread 0, before the first
// barrier) before its fence and atomic, so no block can see the new value within this launch. Every thread
// of the block calls it; step is the block's shared copy, read only by the thread that stores it.
__device__ __forceinline__ void advance_step_counter(const FusedOptimizerArgs& a, const int64_t& step) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned done = atomicAdd(&a.step_counter->blocks_done, 1u);
    if (done == gridDim.x - 1) {
      a.step_counter->steps = step;
      a.step_counter->blocks_done = 0;
      __threadfence();
    }
  }
}

template <typename Rule, typename TC, bool Vector>
__global__ void fused_optimizer_kernel(FusedOptimizerArgs a) {
  __shared__ Scalars scalars;
  __shared__ bool skip;
  __shared__ int64_t step;
  __shared__ float inv_scale;
  if (threadIdx.x == 0) read_step(a, scalars, skip, step, inv_scale);
  __syncthreads();
  if (skip) return;  // every block sees the same flag: nothing is written, the counter stays
  const Scalars s = scalars;
  const float inv = inv_scale;
  const int64_t stride = grid_threads();
  int64_t start = 0;
  if constexpr (Vector) {
    const int64_t quads = a.n / 4;
    update_quads<Rule, TC>(a, quads, stride, inv, s);
    start = quads * 4;
  }
  for (int64_t i = start + global_thread(); i < a.n; i += stride) update_one<Rule, TC>(a, i, inv, s);
  if (a.step_counter && a.advances_step_counter) advance_step_counter(a, step);
}

template <typename Rule>
void launch_rule(const FusedOptimizerArgs& a, cudaStream_t stream) {
  bool vector = aligned16(a.params) && aligned16(a.grads) && (a.params_copy == nullptr || aligned16(a.params_copy));
  for (int k = 0; k < Rule::kStates; ++k) vector = vector && aligned16(a.state[k]);
  const unsigned grid = grid_for(vector ? a.n / 4 + 1 : a.n);
  auto go = [&](auto copy_tag) {
    using TC = typename decltype(copy_tag)::type;
    if (vector)
      fused_optimizer_kernel<Rule, TC, true><<<grid, kThreads, 0, stream>>>(a);
    else
      fused_optimizer_kernel<Rule, TC, false><<<grid, kThreads, 0, stream>>>(a);
  };
  if (a.params_copy == nullptr)
    go(TypeTag<NoCopy>{});
  else if (a.copy_dtype == DType::F16)
    go(TypeTag<__half>{});
  else if (a.copy_dtype == DType::BF16)
    go(TypeTag<__nv_bfloat16>{});
  else
    fatal("fused_optimizer_step: the weight copy must be F16 or BF16");
  CHECK_CUDA_LAUNCH();
}

// The launch's own view of the buffers: every pointer moved to the range's first element and n its
// length, so that the kernel (and its alignment test) sees a whole buffer.
FusedOptimizerArgs range_of(const FusedOptimizerArgs& a) {
  if (a.count < 0) return a;
  if (a.offset < 0 || a.offset > a.n || a.count > a.n - a.offset)
    fatal("fused_optimizer_step: the range [" + std::to_string(a.offset) + ", " + std::to_string(a.offset + a.count) +
          ") lies outside the " + std::to_string(a.n) + " elements of the buffers");
  FusedOptimizerArgs r = a;
  r.params += a.offset;
  r.grads = a.range_grads ? a.range_grads : a.grads + a.offset;
  for (float*& s : r.state)
    if (s) s += a.offset;
  if (r.params_copy) r.params_copy = static_cast<char*>(r.params_copy) + a.offset * dtype_size(a.copy_dtype);
  r.n = a.count;
  r.offset = 0;
  r.count = -1;
  return r;
}

}  // namespace

void fused_optimizer_step(const FusedOptimizerArgs& whole, cudaStream_t stream) {
  const FusedOptimizerArgs a = range_of(whole);
  if (a.n <= 0) {
    if (a.step_counter && a.advances_step_counter && whole.n > 0)
      fatal("fused_optimizer_step: an empty range cannot advance the step counter");
    return;
  }
  if (a.params == nullptr || a.grads == nullptr) fatal("fused_optimizer_step: params and grads are required");
  auto need_state = [&](int count) {
    for (int k = 0; k < count; ++k)
      if (a.state[k] == nullptr) fatal("fused_optimizer_step: state buffer " + std::to_string(k) + " is missing");
  };
  switch (a.kind) {
    case OptimizerKind::Sgd:
      if (a.sgd.momentum != 0.0) {
        need_state(1);
        launch_rule<SgdMomentumRule>(a, stream);
      } else {
        launch_rule<SgdPlainRule>(a, stream);
      }
      return;
    case OptimizerKind::Adadelta:
      need_state(2);
      launch_rule<AdadeltaRule>(a, stream);
      return;
    case OptimizerKind::Adam:
      if (a.adam.amsgrad) {
        need_state(3);
        launch_rule<AdamAmsgradRule>(a, stream);
      } else {
        need_state(2);
        launch_rule<AdamRule>(a, stream);
      }
      return;
  }
  fatal("fused_optimizer_step: unknown optimizer kind");
}

}  // namespace sb::kernels
