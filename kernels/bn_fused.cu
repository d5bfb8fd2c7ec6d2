// The fused batch-norm passes (see bn_fused.h).
//
// Two traversals cover the supported tensors, both with the channel fixed per thread so that the
// per-channel coefficients sit in registers and the reductions accumulate there:
//  - NHWC: a 2-d grid; x of the block and grid picks a group of 8 channels (one 16-byte load of fp16/bf16,
//    two of fp32), y walks the pixels. The element passes take 4 consecutive w per item, so that one
//    Philox draw per channel gives the mask of all 4 (the logical index of (n, c, h, w0..w0+3) is 4
//    consecutive integers starting at a multiple of 4).
//  - NCHW: blockIdx.x is the channel, blockIdx.y and the threads walk its n planes 4 elements at a time
//    (4 consecutive logical elements: one draw).
// Sums are accumulated per thread in fp32 and over the block in fp32; each block stores its partial sums
// (no atomics), and a per-channel pass adds them up in double in block order, so that every result is
// the same from run to run (bitwise comparisons of CUDA graph replays, --deterministic).
#include "kernels/bn_fused.h"

#include <algorithm>
#include <type_traits>
#include <string>

#include "kernels/device_utils.cuh"
#include "kernels/dropout_mask.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kGroup = 8;  // channels per NHWC load
constexpr int kRun = 4;    // consecutive logical elements sharing one Philox draw

template <typename T>
struct alignas(kRun * sizeof(T)) Quad {
  T v[kRun];
};
using Group = float[kGroup];

// The workspace (bn_fused_workspace_bytes): double sums[2c] | float shift[c] | float partials[blocks][2c].
struct Workspace {
  double* sums;
  float* shift;
  float* partials;
};
__host__ __device__ inline Workspace carve(void* base, int64_t c) {
  Workspace w;
  w.sums = static_cast<double*>(base);
  w.shift = reinterpret_cast<float*>(w.sums + 2 * c);
  w.partials = w.shift + c;
  return w;
}

// ---- the element maths, shared by every traversal ----

// The forward value before the residual: dropout(relu(x * a + b)).
template <bool Drop>
__device__ __forceinline__ float apply_value(float x, float a, float b, bool relu, bool keep, float scale) {
  float v = fmaf(x, a, b);
  if (relu) v = fmaxf(v, 0.0f);
  if constexpr (Drop) v = keep ? v * scale : 0.0f;
  return v;
}

// The gradient at the BN output: dy through the dropout and the ReLU (recomputed from x, a, b exactly as
// the forward computed it).
template <bool Drop>
__device__ __forceinline__ float bn_output_grad(float dy, float x, float a, float b, bool relu, bool keep,
                                                float scale) {
  float g = dy;
  if constexpr (Drop) g = keep ? g * scale : 0.0f;
  if (relu && !(fmaf(x, a, b) > 0.0f)) g = 0.0f;
  return g;
}

// Per-channel dx = k1 * g - k2 - k3 * (x - mean), from the backward sums.
struct DxCoefficients {
  float mean, k1, k2, k3;
};
__device__ __forceinline__ DxCoefficients dx_coefficients(const BnBackward& a, int64_t c, int64_t ch, double count) {
  const double* sums = carve(a.workspace, c).sums;
  const float inv_std = a.saved_inv_std[ch];
  const float k1 = a.scale[ch] * inv_std;
  DxCoefficients k;
  k.mean = a.saved_mean[ch];
  k.k1 = k1;
  k.k2 = static_cast<float>(k1 * (sums[ch] / count));
  k.k3 = static_cast<float>(k1 * inv_std * inv_std * (sums[c + ch] / count));
  return k;
}
__device__ __forceinline__ void write_param_grads(const BnBackward& a, int64_t c, int64_t ch) {
  const double* sums = carve(a.workspace, c).sums;
  a.dbias[ch] = static_cast<float>(sums[ch]);
  a.dscale[ch] = static_cast<float>(sums[c + ch] * a.saved_inv_std[ch]);
}

// ---- block reductions into the workspace's partials: row blockIdx.y, [0, c) first sums, [c, 2c) second ----

// NHWC: every thread holds 2 * kGroup partial sums for the channels of its column; the block adds them over
// threadIdx.y.
__device__ void reduce_columns(const Group& s1, const Group& s2, bool active, int64_t ch0, int64_t c, float* partials) {
  __shared__ float partial[kThreads * 2 * kGroup];
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  float* mine = partial + (ty * bx + tx) * 2 * kGroup;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    mine[j] = s1[j];
    mine[kGroup + j] = s2[j];
  }
  __syncthreads();
  if (!active) return;
  for (int k = ty; k < 2 * kGroup; k += by) {
    float total = 0.0f;
    for (int r = 0; r < by; ++r) total += partial[(r * bx + tx) * 2 * kGroup + k];
    const int64_t ch = ch0 + (k % kGroup);
    partials[blockIdx.y * 2 * c + (k < kGroup ? ch : c + ch)] = total;
  }
}

// NCHW: the block's threads share one channel.
__device__ void reduce_block(float s1, float s2, int64_t ch, int64_t c, float* partials) {
  __shared__ float partial[2][kThreads / 32];
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    partial[0][warp] = s1;
    partial[1][warp] = s2;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  float t1 = 0.0f, t2 = 0.0f;
  for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) {
    t1 += partial[0][i];
    t2 += partial[1][i];
  }
  partials[blockIdx.y * 2 * c + ch] = t1;
  partials[blockIdx.y * 2 * c + c + ch] = t2;
}

// ---- NHWC traversal ----

// Item t of the element passes: pixel (image, row, 4*wq) of the column's channel group. `stored` is the
// offset of its first element; `group` is the Philox group of its first channel (the others follow at a
// stride of h*w/4).
template <typename I>
struct NhwcItem {
  I stored;
  uint64_t group;
};
template <typename I>
__device__ __forceinline__ NhwcItem<I> nhwc_item(I t, I ch0, I c, I h, I w) {
  const I w4 = w / kRun;
  const I wq = t % w4, rest = t / w4;
  const I row = rest % h, image = rest / h;
  NhwcItem<I> it;
  it.stored = ((image * h + row) * w + wq * kRun) * c + ch0;
  it.group = static_cast<uint64_t>(((image * c + ch0) * h + row) * w + wq * kRun) / kRun;
  return it;
}

// Bit (q * kGroup + j) says whether channel j of the item's w0 + q is kept.
template <bool Drop>
__device__ __forceinline__ uint32_t nhwc_keep_bits(const DropoutMask& d, uint64_t step, uint64_t group,
                                                   uint64_t group_stride) {
  if constexpr (!Drop) return 0xffffffffu;
  uint32_t bits = 0;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    const Philox4 r = mask_words(d, step, group + j * group_stride);
#pragma unroll
    for (int q = 0; q < kRun; ++q)
      if (mask_keeps(r.v[q], d.threshold)) bits |= 1u << (q * kGroup + j);
  }
  return bits;
}

template <typename T>
__device__ __forceinline__ Pack<T, kGroup> load_group(const T* p, int64_t at) {
  return *reinterpret_cast<const Pack<T, kGroup>*>(p + at);
}

template <typename I>
__device__ __forceinline__ void load_channels(const float* p, I ch0, Group& out) {
#pragma unroll
  for (int j = 0; j < kGroup; ++j) out[j] = p[ch0 + j];
}

// Calls f(offset, keep) for each pixel of the thread's items in the column at ch0, where bit j of keep says
// whether channel ch0 + j is kept by the dropout (all ones without).
template <bool Drop, typename I, typename F>
__device__ __forceinline__ void for_each_nhwc_pixel(I ch0, I n, I c, I h, I w, const DropoutMask& d, F&& f) {
  const uint64_t step = Drop ? mask_step(d) : 0;
  const uint64_t group_stride = static_cast<uint64_t>(h * w / kRun);
  const I items = n * h * (w / kRun);
  for (I t = static_cast<I>(blockIdx.y * blockDim.y + threadIdx.y); t < items;
       t += static_cast<I>(gridDim.y * blockDim.y)) {
    const NhwcItem<I> it = nhwc_item(t, ch0, c, h, w);
    const uint32_t keep = nhwc_keep_bits<Drop>(d, step, it.group, group_stride);
#pragma unroll
    for (int q = 0; q < kRun; ++q) f(it.stored + q * c, keep >> (q * kGroup));
  }
}

template <typename T, typename I>
__global__ void stats_nhwc_kernel(const T* x, I n, I c, I h, I w, Workspace ws) {
  const I ch0 = static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x) * kGroup;
  const bool active = ch0 < c;
  Group shift = {}, s1 = {}, s2 = {};
  if (active) {
    const Pack<T, kGroup> first = load_group(x, ch0);
#pragma unroll
    for (int j = 0; j < kGroup; ++j) shift[j] = to_float(first.v[j]);
    const I pixels = n * h * w;
    for (I p = static_cast<I>(blockIdx.y * blockDim.y + threadIdx.y); p < pixels;
         p += static_cast<I>(gridDim.y * blockDim.y)) {
      const Pack<T, kGroup> v = load_group(x, p * c + ch0);
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        const float d = to_float(v.v[j]) - shift[j];
        s1[j] += d;
        s2[j] = fmaf(d, d, s2[j]);
      }
    }
    if (blockIdx.y == 0 && threadIdx.y == 0)
      for (int j = 0; j < kGroup; ++j) ws.shift[ch0 + j] = shift[j];
  }
  reduce_columns(s1, s2, active, ch0, c, ws.partials);
}

template <typename T, typename I, bool Drop>
__global__ void apply_nhwc_kernel(I n, I c, I h, I w, BnApply a, DropoutMask d) {
  const I ch0 = static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x) * kGroup;
  if (ch0 >= c) return;
  const T* x = static_cast<const T*>(a.x);
  const T* res = static_cast<const T*>(a.residual);
  T* y = static_cast<T*>(a.y);
  Group ca, cb, cr{};
  load_channels(a.a, ch0, ca);
  load_channels(a.b, ch0, cb);
  if (a.residual_bias) load_channels(a.residual_bias, ch0, cr);
  for_each_nhwc_pixel<Drop>(ch0, n, c, h, w, d, [&](I at, uint32_t keep) {
    const Pack<T, kGroup> v = load_group(x, at);
    Pack<T, kGroup> r;
    if (res) r = load_group(res, at);
    Pack<T, kGroup> out;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      float o = apply_value<Drop>(to_float(v.v[j]), ca[j], cb[j], a.relu, (keep >> j) & 1u, d.scale);
      if (res) o += to_float(r.v[j]) + cr[j];
      out.v[j] = from_float<T>(o);
    }
    *reinterpret_cast<Pack<T, kGroup>*>(y + at) = out;
  });
}

// Pass 1 (Dx = false) accumulates the sums; pass 2 (Dx = true) writes dx and the parameter gradients.
template <typename T, typename I, bool Drop, bool Dx>
__global__ void backward_nhwc_kernel(I n, I c, I h, I w, BnBackward a, DropoutMask d) {
  const I ch0 = static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x) * kGroup;
  const bool active = ch0 < c;
  if (Dx && !active) return;
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.dx);
  const double count = static_cast<double>(n) * static_cast<double>(h) * static_cast<double>(w);
  Group ca = {}, cb = {}, mean = {}, k1 = {}, k2 = {}, k3 = {}, s1 = {}, s2 = {};
  if (active) {
    load_channels(a.a, ch0, ca);
    load_channels(a.b, ch0, cb);
    load_channels(a.saved_mean, ch0, mean);
    if constexpr (Dx) {
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        const DxCoefficients k = dx_coefficients(a, c, ch0 + j, count);
        k1[j] = k.k1;
        k2[j] = k.k2;
        k3[j] = k.k3;
        if (blockIdx.y == 0 && threadIdx.y == 0) write_param_grads(a, c, ch0 + j);
      }
    }
    for_each_nhwc_pixel<Drop>(ch0, n, c, h, w, d, [&](I at, uint32_t keep) {
      const Pack<T, kGroup> xv = load_group(x, at), gv = load_group(dy, at);
      Pack<T, kGroup> out;
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        const float xf = to_float(xv.v[j]);
        const float g = bn_output_grad<Drop>(to_float(gv.v[j]), xf, ca[j], cb[j], a.relu, (keep >> j) & 1u, d.scale);
        if constexpr (Dx) {
          out.v[j] = from_float<T>(k1[j] * g - k2[j] - k3[j] * (xf - mean[j]));
        } else {
          s1[j] += g;
          s2[j] = fmaf(g, xf - mean[j], s2[j]);
        }
      }
      if constexpr (Dx) *reinterpret_cast<Pack<T, kGroup>*>(dx + at) = out;
    });
  }
  if constexpr (!Dx) reduce_columns(s1, s2, active, ch0, c, carve(a.workspace, c).partials);
}

// ---- NCHW traversal: blockIdx.x = channel; quad q of the channel is image q / (h*w/4), at (q % (h*w/4)) * 4 ----

template <typename I>
__device__ __forceinline__ I nchw_offset(I q, I ch, I c, I plane) {
  const I quads = plane / kRun;
  return ((q / quads) * c + ch) * plane + (q % quads) * kRun;
}

template <typename T>
__device__ __forceinline__ Quad<T> load_quad(const T* p, int64_t at) {
  return *reinterpret_cast<const Quad<T>*>(p + at);
}

// Calls f(offset, words) for each quad of the thread's items in channel ch, with the quad's Philox words.
template <bool Drop, typename I, typename F>
__device__ __forceinline__ void for_each_nchw_quad(I ch, I n, I c, I plane, const DropoutMask& d, F&& f) {
  const uint64_t step = Drop ? mask_step(d) : 0;
  const I items = n * (plane / kRun);
  for (I q = static_cast<I>(blockIdx.y * blockDim.x + threadIdx.x); q < items;
       q += static_cast<I>(gridDim.y * blockDim.x)) {
    const I at = nchw_offset(q, ch, c, plane);
    Philox4 words{};
    if constexpr (Drop) words = mask_words(d, step, static_cast<uint64_t>(at) / kRun);
    f(at, words);
  }
}

template <typename T, typename I>
__global__ void stats_nchw_kernel(const T* x, I n, I c, I plane, Workspace ws) {
  const I ch = static_cast<I>(blockIdx.x);
  const float shift = to_float(x[ch * plane]);
  float s1 = 0.0f, s2 = 0.0f;
  const I items = n * (plane / kRun);
  for (I q = static_cast<I>(blockIdx.y * blockDim.x + threadIdx.x); q < items;
       q += static_cast<I>(gridDim.y * blockDim.x)) {
    const Quad<T> v = load_quad(x, nchw_offset(q, ch, c, plane));
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const float dv = to_float(v.v[k]) - shift;
      s1 += dv;
      s2 = fmaf(dv, dv, s2);
    }
  }
  if (blockIdx.y == 0 && threadIdx.x == 0) ws.shift[ch] = shift;
  reduce_block(s1, s2, ch, c, ws.partials);
}

template <typename T, typename I, bool Drop>
__global__ void apply_nchw_kernel(I n, I c, I plane, BnApply a, DropoutMask d) {
  const I ch = static_cast<I>(blockIdx.x);
  const T* x = static_cast<const T*>(a.x);
  const T* res = static_cast<const T*>(a.residual);
  T* y = static_cast<T*>(a.y);
  const float ca = a.a[ch], cb = a.b[ch], cr = a.residual_bias ? a.residual_bias[ch] : 0.0f;
  for_each_nchw_quad<Drop>(ch, n, c, plane, d, [&](I at, const Philox4& words) {
    const Quad<T> v = load_quad(x, at);
    Quad<T> r;
    if (res) r = load_quad(res, at);
    Quad<T> out;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      float o = apply_value<Drop>(to_float(v.v[k]), ca, cb, a.relu, mask_keeps(words.v[k], d.threshold), d.scale);
      if (res) o += to_float(r.v[k]) + cr;
      out.v[k] = from_float<T>(o);
    }
    *reinterpret_cast<Quad<T>*>(y + at) = out;
  });
}

template <typename T, typename I, bool Drop, bool Dx>
__global__ void backward_nchw_kernel(I n, I c, I plane, BnBackward a, DropoutMask d) {
  const I ch = static_cast<I>(blockIdx.x);
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.dx);
  const float ca = a.a[ch], cb = a.b[ch], mean = a.saved_mean[ch];
  DxCoefficients k{};
  if constexpr (Dx) {
    k = dx_coefficients(a, c, ch, static_cast<double>(n) * static_cast<double>(plane));
    if (blockIdx.y == 0 && threadIdx.x == 0) write_param_grads(a, c, ch);
  }
  float s1 = 0.0f, s2 = 0.0f;
  for_each_nchw_quad<Drop>(ch, n, c, plane, d, [&](I at, const Philox4& words) {
    const Quad<T> xv = load_quad(x, at), gv = load_quad(dy, at);
    Quad<T> out;
#pragma unroll
    for (int j = 0; j < kRun; ++j) {
      const float xf = to_float(xv.v[j]);
      const float g =
          bn_output_grad<Drop>(to_float(gv.v[j]), xf, ca, cb, a.relu, mask_keeps(words.v[j], d.threshold), d.scale);
      if constexpr (Dx) {
        out.v[j] = from_float<T>(k.k1 * g - k.k2 - k.k3 * (xf - mean));
      } else {
        s1 += g;
        s2 = fmaf(g, xf - mean, s2);
      }
    }
    if constexpr (Dx) *reinterpret_cast<Quad<T>*>(dx + at) = out;
  });
  if constexpr (!Dx) reduce_block(s1, s2, ch, c, carve(a.workspace, c).partials);
}

// sums[i] = the partials of column i (of 2c) added up over the blocks: one block per column, each thread a
// fixed stride of rows, then a tree in shared memory, so the order is the same on every run.
constexpr int kCombineThreads = 128;
__global__ void combine_partials_kernel(Workspace ws, int64_t c, int64_t blocks) {
  __shared__ double partial[kCombineThreads];
  const int64_t i = blockIdx.x;
  double total = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += kCombineThreads) total += ws.partials[b * 2 * c + i];
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int half = kCombineThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) ws.sums[i] = partial[0];
}

__global__ void finalize_kernel(int64_t c, int64_t count, Workspace ws, BnFinalize f) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double m_count = static_cast<double>(count);
  const double centred = ws.sums[ch] / m_count;  // mean - shift
  const double var = fmax(ws.sums[c + ch] / m_count - centred * centred, 0.0);
  const double mean = static_cast<double>(ws.shift[ch]) + centred;
  const float inv_std = 1.0f / sqrtf(static_cast<float>(var) + f.eps);  // as the CPU's 1/sqrt(var + eps)
  f.saved_mean[ch] = static_cast<float>(mean);
  f.saved_inv_std[ch] = inv_std;
  const double m = f.momentum;
  f.running_mean[ch] = static_cast<float>((1.0 - m) * f.running_mean[ch] + m * mean);
  f.running_var[ch] = static_cast<float>((1.0 - m) * f.running_var[ch] + m * var * m_count / (m_count - 1.0));
  const float a = f.scale[ch] * inv_std;
  f.a[ch] = a;
  f.b[ch] = f.bias[ch] - static_cast<float>(mean) * a;
}

// ---- launch geometry ----

// Enough blocks for two waves (half of grid_for's cap of four); fewer blocks also mean fewer partial sums
// to add up.
int64_t block_budget() { return std::max<int64_t>(1, grid_for(int64_t{1} << 40) / 2); }

struct Geometry {
  dim3 grid, block;
};

// NHWC: x over channel groups, y over `rows` (pixels or items).
Geometry nhwc_geometry(const BnFusedShape& s, int64_t rows) {
  const int64_t groups = s.c / kGroup;
  const int bx = static_cast<int>(std::min<int64_t>(groups, 32));
  const int by = std::max(1, kThreads / bx);
  Geometry g;
  g.block = dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  const int64_t gx = (groups + bx - 1) / bx;
  const int64_t gy = std::clamp<int64_t>(std::min((rows + by - 1) / by, block_budget() / gx), 1, 65535);
  g.grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  return g;
}

// NCHW: x over channels, y over each channel's quads.
Geometry nchw_geometry(const BnFusedShape& s) {
  const int64_t items = s.n * (s.h * s.w / kRun);
  const int64_t gy = std::clamp<int64_t>(std::min((items + kThreads - 1) / kThreads, block_budget() / s.c), 1, 65535);
  Geometry g;
  g.block = dim3(kThreads);
  g.grid = dim3(static_cast<unsigned>(s.c), static_cast<unsigned>(gy));
  return g;
}

// Every pass over a tensor uses this geometry, so that the reductions' partials have one row per blockIdx.y.
Geometry pass_geometry(const BnFusedShape& s) {
  return s.layout == Layout::NHWC ? nhwc_geometry(s, s.n * s.h * (s.w / kRun)) : nchw_geometry(s);
}

void combine_partials(const BnFusedShape& s, void* workspace, cudaStream_t stream) {
  combine_partials_kernel<<<static_cast<unsigned>(2 * s.c), kCombineThreads, 0, stream>>>(carve(workspace, s.c), s.c,
                                                                                         pass_geometry(s).grid.y);
  CHECK_CUDA_LAUNCH();
}

void require_supported(const BnFusedShape& s, std::initializer_list<const void*> tensors, const char* what) {
  if (!bn_fused_supports(s, tensors))
    fatal(std::string(what) + ": tensor [" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
          std::to_string(s.h) + ", " + std::to_string(s.w) + "] " + layout_name(s.layout) +
          " is not supported (check bn_fused_supports first)");
}

// Calls f(TypeTag<T>, TypeTag<I>) with I = int32_t when every index fits (64-bit division is several
// times dearer), else int64_t.
template <typename F>
void dispatch_types(const BnFusedShape& s, F&& f) {
  const bool small = s.n * s.c * s.h * s.w < (int64_t{1} << 30);
  dispatch_dtype(s.dtype, [&](auto tag) {
    if (small) f(tag, TypeTag<int32_t>{});
    else f(tag, TypeTag<int64_t>{});
  });
}

DropoutMask mask_of(const BnDropout& d) {
  return make_dropout_mask(d.p, d.mask_key, d.step, d.step_device, d.first_element, "fused batch norm dropout");
}

// The template arguments of an element pass: element type, index type, whether it drops out.
template <typename Element, typename Index, bool Drop>
struct PassTypes {
  using T = Element;
  using I = Index;
  static constexpr bool drop = Drop;
};

// Calls f(PassTypes<...>{}, geometry) to launch an element pass (4 elements along w per item), then checks
// the launch.
template <typename F>
void dispatch_element_pass(const BnFusedShape& s, const BnDropout& dropout, F&& f) {
  const Geometry g = pass_geometry(s);
  dispatch_types(s, [&](auto type, auto index) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    if (dropout.p > 0.0) f(PassTypes<T, I, true>{}, g);
    else f(PassTypes<T, I, false>{}, g);
  });
  CHECK_CUDA_LAUNCH();
}

bool positive_shape(const BnFusedShape& s) { return s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0; }

}  // namespace

bool bn_fused_supports(const BnFusedShape& s, std::initializer_list<const void*> tensors) {
  if (!positive_shape(s)) return false;
  const size_t element = dtype_size(s.dtype);
  const bool nhwc = s.layout == Layout::NHWC;
  if (nhwc && (s.c % kGroup != 0 || s.w % kRun != 0)) return false;
  if (!nhwc && (s.h * s.w) % kRun != 0) return false;
  const uintptr_t alignment = nhwc ? 16 : kRun * element;
  for (const void* p : tensors)
    if (p && reinterpret_cast<uintptr_t>(p) % alignment != 0) return false;
  return true;
}

size_t bn_fused_workspace_bytes(const BnFusedShape& s) {
  if (!positive_shape(s)) return 0;
  const auto c = static_cast<size_t>(s.c);
  return 2 * c * sizeof(double) + c * sizeof(float) + pass_geometry(s).grid.y * 2 * c * sizeof(float);
}

void bn_channel_statistics(const BnFusedShape& s, const BnStatistics& a, cudaStream_t stream) {
  require_supported(s, {a.x}, "bn_channel_statistics");
  const Geometry g = pass_geometry(s);
  const Workspace ws = carve(a.workspace, s.c);
  dispatch_types(s, [&](auto type, auto index) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    const T* x = static_cast<const T*>(a.x);
    if (s.layout == Layout::NHWC)
      stats_nhwc_kernel<T, I><<<g.grid, g.block, 0, stream>>>(x, I(s.n), I(s.c), I(s.h), I(s.w), ws);
    else
      stats_nchw_kernel<T, I><<<g.grid, g.block, 0, stream>>>(x, I(s.n), I(s.c), I(s.h * s.w), ws);
  });
  CHECK_CUDA_LAUNCH();
  combine_partials(s, a.workspace, stream);
}

void bn_finalize_statistics(const BnFusedShape& s, const BnFinalize& f, cudaStream_t stream) {
  const int64_t count = s.n * s.h * s.w;
  if (!positive_shape(s) || count <= 1)
    fatal("bn_finalize_statistics: needs more than one value per channel, got " + std::to_string(count));
  const unsigned blocks = static_cast<unsigned>((s.c + kThreads - 1) / kThreads);
  finalize_kernel<<<blocks, kThreads, 0, stream>>>(s.c, count, carve(const_cast<void*>(f.workspace), s.c), f);
  CHECK_CUDA_LAUNCH();
}

void bn_apply_forward(const BnFusedShape& s, const BnApply& a, cudaStream_t stream) {
  require_supported(s, {a.x, a.y, a.residual}, "bn_apply_forward");
  const DropoutMask d = mask_of(a.dropout);
  dispatch_element_pass(s, a.dropout, [&](auto types, const Geometry& g) {
    using K = decltype(types);
    using I = typename K::I;
    if (s.layout == Layout::NHWC)
      apply_nhwc_kernel<typename K::T, I, K::drop><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d);
    else
      apply_nchw_kernel<typename K::T, I, K::drop><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h * s.w), a, d);
  });
}

namespace {
template <bool Dx>
void launch_backward(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream) {
  const DropoutMask d = mask_of(a.dropout);
  dispatch_element_pass(s, a.dropout, [&](auto types, const Geometry& g) {
    using K = decltype(types);
    using T = typename K::T;
    using I = typename K::I;
    if (s.layout == Layout::NHWC)
      backward_nhwc_kernel<T, I, K::drop, Dx><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d);
    else
      backward_nchw_kernel<T, I, K::drop, Dx><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h * s.w), a, d);
  });
}
}  // namespace

void bn_backward_reduce(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream) {
  require_supported(s, {a.x, a.dy}, "bn_backward_reduce");
  launch_backward<false>(s, a, stream);
  combine_partials(s, a.workspace, stream);
}

void bn_backward_dx(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream) {
  require_supported(s, {a.x, a.dy, a.dx}, "bn_backward_dx");
  launch_backward<true>(s, a, stream);
}

}  // namespace sb::kernels
