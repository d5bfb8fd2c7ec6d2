// Fused memory-bound passes of batch norm in training and inference, for the run
//   y = [residual +] dropout(relu(bn(x)))
// that follows each convolution of the Wide ResNet. Per step they make four passes over the activation
// instead of the separate layers' eight or more (docs/kernels.md counts the bytes):
//   forward:  bn_channel_statistics (reads x) -> bn_finalize_statistics (the partial sums) -> bn_apply_forward
//             (reads x [and residual], writes y [and the keep bits])
//   backward: bn_backward_reduce (reads x, dy [, keep bits] [, the following ReLU's output, writing dy masked];
//             writes dgamma, dbeta) -> bn_backward_dx (reads x, dy [, keep bits], writes dx)
// The ReLU condition is recomputed in backward from x. The dropout mask is the one of kernels/dropout.h
// (Philox at the logical NCHW index), so the CPU layers drop the same elements; under NHWC the apply pass
// stores it as one bit per element (bn_fused_mask_bytes) for the backward passes to read, and without that
// buffer (and under NCHW) each pass draws it again.
// Semantics are PyTorch's BatchNorm2d (biased batch variance for normalising, unbiased for the running
// variance, momentum update); statistics, scale, bias and their gradients are fp32.
//
// Supported tensors (bn_fused_supports): NHWC with c % 8 == 0 and w % 4 == 0 (16-byte loads of 8 channels
// at 4 consecutive w, one Philox draw per channel and 4 w), or, without dropout, NHWC with c % 8 == 0 and
// n*h*w % 4 == 0 (the passes then walk the pixels as one row: ResNet's 14x14 and 7x7 stages); NCHW with
// h*w % 4 == 0 (4 consecutive elements, one draw); pointers aligned to 16 bytes (NHWC) or 4 elements
// (NCHW). The CUDA layers keep the separate layers for anything else.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/dtype.h"
#include "core/window_extent.h"

namespace sb::kernels {

// A logical [n, c, h, w] activation stored in `layout` with elements of `dtype`.
struct BnFusedShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  Layout layout = Layout::NCHW;
  DType dtype = DType::F32;
};

// Whether the fused passes run on this shape with these tensors (nullptr entries are ignored), with or
// without a dropout.
bool bn_fused_supports(const BnFusedShape& s, bool dropout, std::initializer_list<const void*> tensors);

// The scratch memory of the reductions: per-block partial sums, added up in a fixed order so that the
// passes are deterministic (no atomics). One workspace serves a layer's forward and backward.
size_t bn_fused_workspace_bytes(const BnFusedShape& s);

// The dropout's keep bits of one tensor (BnDropout::keep_bits): n*c*h*w / 8 bytes under NHWC, 0 (none
// stored; the backward passes draw the mask again) under NCHW.
size_t bn_fused_mask_bytes(const BnFusedShape& s);

// Where the keep bit of logical element (n, c, h, w) of an NHWC tensor lies: bit `bit` of 32-bit word
// `word`. An item of 4 consecutive w (from a multiple of 4) and 8 channels (from a multiple of 8) fills one
// word, bit (w % 4) * 8 + c % 8; words follow the items' order in memory (pixel-major, then channel group).
struct BnMaskBit {
  int64_t word = 0;
  int bit = 0;
};
inline BnMaskBit bn_fused_mask_bit(const BnFusedShape& s, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t item = (n * s.h + h) * (s.w / 4) + w / 4;
  return BnMaskBit{item * (s.c / 8) + c / 8, static_cast<int>((w % 4) * 8 + c % 8)};
}

// Pass 1 of training forward: per-channel sums of (x - shift) and (x - shift)^2 over n*h*w, where the shift
// is the channel's first element: summing around a value of the batch keeps the sum of squares from
// cancelling when |mean| >> std.
struct BnStatistics {
  const void* x = nullptr;
  void* workspace = nullptr;  // bn_fused_workspace_bytes(s)
};
void bn_channel_statistics(const BnFusedShape& s, const BnStatistics& a, cudaStream_t stream);

// From the statistics pass's partial sums (added up here, in a fixed order): the batch mean and
// 1/sqrt(var + eps) for backward, PyTorch's running update (unbiased variance, in place), and the
// coefficients y = x * a + b of the apply pass.
struct BnFinalize {
  const void* workspace = nullptr;  // after bn_channel_statistics on the same shape
  const float* scale = nullptr;     // gamma [c]
  const float* bias = nullptr;      // beta [c]
  float eps = 1e-5f;
  double momentum = 0.1;
  float* saved_mean = nullptr;     // [c]
  float* saved_inv_std = nullptr;  // [c]
  float* running_mean = nullptr;   // [c], updated in place
  float* running_var = nullptr;    // [c], updated in place
  float* a = nullptr;              // [c]
  float* b = nullptr;              // [c]
  float* neg_mean = nullptr;       // [c], -mean, where given (a dgrad that recomputes the batch norm takes it)
};
void bn_finalize_statistics(const BnFusedShape& s, const BnFinalize& f, cudaStream_t stream);

// The same finalize from per-channel sums of x and x^2 over the n*h*w values of each channel, as a
// convolution's epilogue writes them (cuDNN's genstats, nn/cuda/conv_ops.h: ConvStatistics) so that no pass
// reads x for them. The sums are not shifted: var = E[x^2] - mean^2 loses precision where |mean| >> std, as
// cuDNN's fused batch norm does; f.workspace is not read.
void bn_finalize_sums(const BnFusedShape& s, const float* sum, const float* sqsum, const BnFinalize& f,
                      cudaStream_t stream);

// The dropout of a fused pass: p == 0 is none (also Eval mode). Keys as kernels::dropout_forward.
struct BnDropout {
  double p = 0.0;
  uint64_t mask_key = 0, step = 0;
  const uint64_t* step_device = nullptr;  // overrides step when not null (CUDA graph replays)
  uint64_t first_element = 0;             // the mask index of element 0 (a multiple of 4; see dropout.h)
  // NHWC with p > 0: bn_fused_mask_bytes(s) of keep bits, written by bn_apply_forward and read by the
  // backward passes instead of drawing the mask again; nullptr: every pass draws. Must be nullptr where
  // bn_fused_mask_bytes is 0.
  uint32_t* keep_bits = nullptr;
};

// The max pool that follows a [BatchNorm2d, ReLU] run (the ResNet stem's 3x3/2 with padding 1), taken into
// the run's passes: forward writes the pooled output and no normalised tensor, backward routes the pool's
// output gradient to each window's maximum as it reads it, so that neither the run's output nor the pool's
// input gradient is ever written. Semantics and results are those of kernels/pooling.h's max pool after
// bn_apply_forward, bit for bit. kernel 0: no pool.
struct BnMaxPool {
  int kernel = 0, stride = 0, pad = 0;
  // One byte per pooled output element, as maxpool_positions_bytes: written by a training forward (nullptr
  // in evaluation), read by backward.
  uint8_t* positions = nullptr;
};
// The pooled [oh, ow] of an input h x w (floor mode, as the MaxPool2d layer).
inline int64_t bn_pooled_extent(int64_t extent, const BnMaxPool& p) {
  return window_extent<int64_t>(extent, p.kernel, p.stride, p.pad);
}
// Whether the passes take this pool after a run on this shape: NHWC with c % 8 == 0 and w % 4 == 0 (real
// rows: the backward's windows need them), windows that keep their positions at any size
// (maxpool_keeps_positions_at_any_size), no dropout, and 16-byte aligned tensors (nullptr entries ignored).
bool bn_maxpool_supports(const BnFusedShape& s, const BnMaxPool& p, std::initializer_list<const void*> tensors);
// The ResNets' stem pool (3x3, stride 2, padding 1), whose windows the backward passes know at compile time.
inline constexpr int kStemPoolKernel = 3, kStemPoolStride = 2, kStemPoolPad = 1;
inline bool bn_maxpool_is_stem_pool(const BnMaxPool& p) {
  return p.kernel == kStemPoolKernel && p.stride == kStemPoolStride && p.pad == kStemPoolPad;
}

// y = [r +] dropout(relu(x * a + b)), the ReLU optional; or, with relu_after_residual, y = relu(x * a + b + r)
// (a bottleneck's end, no dropout); r = residual [* residual_scale[c]] [+ residual_bias[c]], in fp32.
// y may not alias x.
struct BnApply {
  const void* x = nullptr;
  const float* a = nullptr;  // [c]
  const float* b = nullptr;  // [c]
  bool relu = true;
  bool relu_after_residual = false;  // the ReLU applies to the sum (needs a residual and relu)
  BnDropout dropout;
  const void* residual = nullptr;  // same shape and layout as y, or nullptr
  // [c] fp32, added with the residual (a shortcut convolution's bias, which then skips its own pass), or nullptr
  const float* residual_bias = nullptr;
  // [c] fp32, multiplying the residual, or nullptr (1). With residual_bias, the residual is a shortcut batch
  // norm's input and these its coefficients: the shortcut's normalised tensor is never written.
  const float* residual_scale = nullptr;
  void* y = nullptr;
  // NHWC: where given, which elements of y are positive (y > 0, of the stored value), one bit per element in
  // bn_fused_mask_bit's layout (bn_fused_mask_bytes), for the backward that masks by the ReLU that produced y
  // (BnBackward::relu_output_bits) instead of reading y.
  uint32_t* relu_bits = nullptr;
  // NHWC: walk x from its end to its start. Set where x was just written from start to end and not read since
  // (a convolution that summed its output for the batch norm), so that the pass first reads what L2 still
  // holds; the statistics pass ends at the start, where the default then begins.
  bool from_end = false;
  // Training with the per-channel sums of x and x^2 a convolution gave (NHWC only): where `sum` is set, the
  // pass finalizes them itself, as bn_finalize_sums(s, sum, sqsum, finalize) would, instead of reading a and
  // b (finalize.a and .b receive them): one launch fewer per batch norm.
  const float* sum = nullptr;
  const float* sqsum = nullptr;
  BnFinalize finalize;
};
void bn_apply_forward(const BnFusedShape& s, const BnApply& a, cudaStream_t stream);
// The same with the max pool p after it: a.y receives the pooled [n, c, oh, ow] (NHWC), and p.positions,
// where given, the window position of each maximum. Needs a.relu, and no dropout, residual or ReLU after it.
void bn_apply_maxpool_forward(const BnFusedShape& s, const BnApply& a, const BnMaxPool& p, cudaStream_t stream);

// Backward of bn_apply_forward in training (batch statistics), given dy = dL/dy. With
// g = dy * mask * scale * [x*a + b > 0] (the gradient at the BN output) and xhat = (x - mean) * inv_std:
//   dbias = sum g, dscale = sum g * xhat, dx = scale * inv_std * (g - dbias/M - xhat * dscale/M).
// The residual's gradient is dy itself and is not written here. After a relu_after_residual forward, relu is
// false and dy is either the gradient at the sum (the following ReLU layer masked it), or, with
// relu_output_bits, the gradient at the ReLU's output, which bn_backward_reduce masks (dy = 0 where the
// ReLU's output is not positive, as relu_backward) and writes back into dy for bn_backward_dx and the
// shortcut: one pass over the block's output fewer than the ReLU layer's own, which reads the output itself.
struct BnBackward {
  const void* x = nullptr;
  const void* dy = nullptr;
  // The relu_after_residual forward's BnApply::relu_bits (NHWC only), or nullptr.
  const uint32_t* relu_output_bits = nullptr;
  void* dy_in_place = nullptr;        // with relu_output_bits: dy itself, which bn_backward_reduce overwrites
  const float* a = nullptr;  // the forward's coefficients (the ReLU condition is recomputed from them)
  const float* b = nullptr;
  bool relu = true;
  BnDropout dropout;
  const float* scale = nullptr;          // gamma [c]
  const float* saved_mean = nullptr;     // [c]
  const float* saved_inv_std = nullptr;  // [c]
  // A max pool after the run (bn_apply_maxpool_forward): dy is then the pool's output gradient
  // [n, c, oh, ow], which both passes route to the maxima that p.positions name.
  BnMaxPool pool;
  void* workspace = nullptr;             // bn_fused_workspace_bytes(s): sum g and sum g * (x - mean)
  float* dscale = nullptr;               // [c], written (not accumulated) by bn_backward_reduce
  float* dbias = nullptr;                // [c], idem
  void* dx = nullptr;
};
// Pass 1: the sums, into the workspace, and dscale and dbias from them.
void bn_backward_reduce(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream);
// Pass 2: writes dx from the workspace's sums.
void bn_backward_dx(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream);
// The backward of a projection block's end, y = relu(bn(x) + bn_s(x_s)) (bn_apply_forward with
// relu_after_residual, residual x_s and the shortcut's coefficients as residual_scale and residual_bias),
// both batch norms in each pass: dy, the gradient at y, is masked by the bits the forward stored
// (main.relu_output_bits) as it is read, once for both, and is not written, except that main.dx may be dy
// itself (each item is written after the pass has read it). `main` and `shortcut` each give x, scale,
// saved_mean, saved_inv_std, a workspace of its own, dscale, dbias and dx; dy and the bits are main's. NHWC,
// with no ReLU, dropout or pool of the runs' own. The results are those of bn_backward_reduce and
// bn_backward_dx on each, the shortcut's masking dy (up to the order of main's partial sums).
void bn_backward_pair_reduce(const BnFusedShape& s, const BnBackward& main, const BnBackward& shortcut,
                             cudaStream_t stream);
void bn_backward_pair_dx(const BnFusedShape& s, const BnBackward& main, const BnBackward& shortcut,
                         cudaStream_t stream);
// Instead of pass 1 where a convolution's dgrad computed the batch norm's weight gradients from the masked
// gradient g (nn/cuda/conv_ops.h, conv_backward_data_bn_relu): the workspace's sums for pass 2 from them,
// sum g = dbias and sum g * (x - mean) = dscale / inv_std.
void bn_backward_sums_from_gradients(const BnFusedShape& s, const float* dscale, const float* dbias,
                                     const float* saved_inv_std, void* workspace, cudaStream_t stream);

}  // namespace sb::kernels
