// Pooling kernels (see pooling.h). One thread per output element (forward) or input element (backward),
// in storage order, so that consecutive threads touch consecutive addresses: along w in NCHW, along c in
// NHWC. Backward gathers over the windows that cover an input element, in the same (oh, ow) order as the
// CPU reference scatters, so fp32 results match it bit for bit.
#include "kernels/pooling.h"

#include <initializer_list>

#include "core/window_extent.h"
#include "kernels/device_utils.cuh"
#include "kernels/index_type.cuh"
#include "kernels/pool_windows.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

struct Geometry {
  int64_t n, c, h, w, oh, ow;
  int k, s, pad;
};

// The geometry in the kernels' index type.
template <typename I>
struct Geom {
  I n, c, h, w, oh, ow, k, s, pad;
  explicit Geom(const Geometry& g)
      : n(static_cast<I>(g.n)), c(static_cast<I>(g.c)), h(static_cast<I>(g.h)), w(static_cast<I>(g.w)),
        oh(static_cast<I>(g.oh)), ow(static_cast<I>(g.ow)), k(static_cast<I>(g.k)), s(static_cast<I>(g.s)),
        pad(static_cast<I>(g.pad)) {}
};

Geometry make_geometry(const PoolShape& p, const char* what) {
  const int64_t ph = p.h + 2 * p.pad, pw = p.w + 2 * p.pad;
  if (p.kernel < 1 || p.stride < 1 || p.pad < 0 || 2 * p.pad > p.kernel || ph < p.kernel || pw < p.kernel)
    fatal(std::string(what) + ": bad window " + std::to_string(p.kernel) + "/" + std::to_string(p.stride) + "/" +
          std::to_string(p.pad) + " for an input of " + std::to_string(p.h) + "x" + std::to_string(p.w));
  const int64_t k = p.kernel, s = p.stride, pad = p.pad;
  return Geometry{p.n, p.c, p.h, p.w, window_extent(p.h, k, s, pad), window_extent(p.w, k, s, pad), p.kernel,
                  p.stride, p.pad};
}

Geometry unpadded_geometry(const PoolShape& p, const char* what) {
  if (p.pad != 0) fatal(std::string(what) + ": average pooling takes no padding, got " + std::to_string(p.pad));
  return make_geometry(p, what);
}

// Index arithmetic runs in I: int32_t when the input has fewer than 2^30 elements (the usual case; 64-bit
// division is several times dearer and dominated these kernels), else int64_t.
// Coordinates (image, channel, row, col) of a storage index of a [n, c, rows, cols] tensor.
template <typename I>
struct Coord {
  I img, ch, y, x;
};

template <bool Nhwc, typename I>
__device__ __forceinline__ Coord<I> decode(I i, I c, I rows, I cols) {
  Coord<I> q;
  if constexpr (Nhwc) {
    q.ch = i % c;
    i /= c;
    q.x = i % cols;
    i /= cols;
    q.y = i % rows;
    q.img = i / rows;
  } else {
    q.x = i % cols;
    i /= cols;
    q.y = i % rows;
    i /= rows;
    q.ch = i % c;
    q.img = i / c;
  }
  return q;
}

template <bool Nhwc, typename I>
__device__ __forceinline__ I offset(I img, I ch, I y, I x, I c, I rows, I cols) {
  return Nhwc ? ((img * rows + y) * cols + x) * c + ch : ((img * c + ch) * rows + y) * cols + x;
}

// Storage index of the window's maximum (first on ties, a NaN wins as in PyTorch and the CPU layer).
template <typename T, bool Nhwc, typename I>
__device__ __forceinline__ I window_argmax(const T* x, const Geom<I>& g, I img, I ch, I oy, I ox) {
  const I y0 = oy * g.s, x0 = ox * g.s;
  const I step_x = Nhwc ? g.c : 1, step_y = Nhwc ? g.w * g.c : g.w;
  const I first = offset<Nhwc, I>(img, ch, y0, x0, g.c, g.h, g.w);
  I best = first;
  float best_v = to_float(x[best]);
  for (I ky = 0; ky < g.k; ++ky)
    for (I kx = 0; kx < g.k; ++kx) {
      const I at = first + ky * step_y + kx * step_x;
      const float v = to_float(x[at]);
      if (v > best_v || isnan(v)) {
        best = at;
        best_v = v;
      }
    }
  return best;
}


// The gradient of input element i: add(sum, oy, ox) for every output (oy, ox) whose window covers it,
// rows then columns, the order in which the CPU reference scatters. Windows lie over the padded image,
// where input row y sits at y + pad.
template <bool Nhwc, typename I, typename Add>
__device__ __forceinline__ float gather_windows(I i, const Geom<I>& g, Add add) {
  const Coord<I> q = decode<Nhwc, I>(i, g.c, g.h, g.w);
  I y_first, y_last, x_first, x_last;
  covering<I>(q.y + g.pad, g.k, g.s, g.oh, y_first, y_last);
  covering<I>(q.x + g.pad, g.k, g.s, g.ow, x_first, x_last);
  float sum = 0.0f;
  for (I oy = y_first; oy <= y_last; ++oy)
    for (I ox = x_first; ox <= x_last; ++ox) add(sum, q, oy, ox);
  return sum;
}

// Output (oy, ox)'s window over the padded image: its top-left corner (y0, x0) in input coordinates, and
// the rows [y_lo, y_hi) and columns [x_lo, x_hi) of it that lie inside the image.
template <typename I>
struct ClippedWindow {
  I y0, x0, y_lo, y_hi, x_lo, x_hi;
};
template <typename I>
__device__ __forceinline__ ClippedWindow<I> clipped_window(const Geom<I>& g, I oy, I ox) {
  ClippedWindow<I> win;
  win.y0 = oy * g.s - g.pad;
  win.x0 = ox * g.s - g.pad;
  win.y_lo = win.y0 < 0 ? 0 : win.y0;
  win.x_lo = win.x0 < 0 ? 0 : win.x0;
  win.y_hi = win.y0 + g.k < g.h ? win.y0 + g.k : g.h;
  win.x_hi = win.x0 + g.k < g.w ? win.x0 + g.k : g.w;
  return win;
}

// Padded max pooling: the window clipped to the image, its first cell inside starting the search, so
// that padded cells (-inf in PyTorch) never win; pad <= kernel / 2 leaves every window a cell. A search of
// its own, so that the unpadded one keeps its arithmetic.
template <typename T, bool Nhwc, typename I>
__device__ __forceinline__ I padded_window_argmax(const T* x, const Geom<I>& g, I img, I ch, I oy, I ox) {
  const ClippedWindow<I> win = clipped_window(g, oy, ox);
  I best = offset<Nhwc, I>(img, ch, win.y_lo, win.x_lo, g.c, g.h, g.w);
  float best_v = to_float(x[best]);
  for (I yy = win.y_lo; yy < win.y_hi; ++yy)
    for (I xx = win.x_lo; xx < win.x_hi; ++xx) {
      const I at = offset<Nhwc, I>(img, ch, yy, xx, g.c, g.h, g.w);
      const float v = to_float(x[at]);
      if (v > best_v || isnan(v)) {
        best = at;
        best_v = v;
      }
    }
  return best;
}

// The window's argmax: the padded search where the geometry has padding (Padded), else the plain one.
template <typename T, bool Nhwc, bool Padded, typename I>
__device__ __forceinline__ I argmax_of(const T* x, const Geom<I>& g, I img, I ch, I oy, I ox) {
  if constexpr (Padded) return padded_window_argmax<T, Nhwc, I>(x, g, img, ch, oy, ox);
  else return window_argmax<T, Nhwc, I>(x, g, img, ch, oy, ox);
}

template <typename T, bool Nhwc, bool Padded, typename I>
__global__ void maxpool_forward_kernel(const T* __restrict__ x, T* __restrict__ y, Geom<I> g) {
  const I total = g.n * g.c * g.oh * g.ow;
  for (I o = static_cast<I>(global_thread()); o < total; o += static_cast<I>(grid_threads())) {
    const Coord<I> q = decode<Nhwc, I>(o, g.c, g.oh, g.ow);
    y[o] = x[argmax_of<T, Nhwc, Padded, I>(x, g, q.img, q.ch, q.y, q.x)];
  }
}

template <typename T, bool Nhwc, bool Padded, typename I>
__global__ void maxpool_backward_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx,
                                        Geom<I> g) {
  const I total = g.n * g.c * g.h * g.w;
  for (I i = static_cast<I>(global_thread()); i < total; i += static_cast<I>(grid_threads()))
    dx[i] = from_float<T>(gather_windows<Nhwc, I>(i, g, [&](float& sum, const Coord<I>& q, I oy, I ox) {
      if (argmax_of<T, Nhwc, Padded, I>(x, g, q.img, q.ch, oy, ox) == i)
        sum += to_float(dy[offset<Nhwc, I>(q.img, q.ch, oy, ox, g.c, g.oh, g.ow)]);
    }));
}

// Max pooling's common case in NHWC, windows that tile the input (kernel == stride, h and w multiples of
// it) and whole 16-byte vectors of channels: one thread per output pixel and vector, so that every load
// and store is 16 bytes and backward writes each dx element once. The same argmax rule and the same
// arithmetic as the generic kernels, so the results are identical.
template <typename T, int L>
struct alignas(sizeof(T) * L) Lanes {
  T v[L];
};
template <typename T>
constexpr int kVectorLanes = static_cast<int>(16 / sizeof(T));
template <typename T>
using VecPack = Lanes<T, kVectorLanes<T>>;

// The window's first storage index (its top-left element) and the step to the next row of the window.
template <typename I>
struct TiledWindow {
  I first, row_step;
};

template <typename T, typename I>
__device__ __forceinline__ TiledWindow<I> tiled_window(I t, const Geom<I>& g) {
  constexpr int V = kVectorLanes<T>;
  const Coord<I> q = decode<true, I>(t, g.c / V, g.oh, g.ow);  // q.ch: the vector of channels
  return TiledWindow<I>{((q.img * g.h + q.y * g.s) * g.w + q.x * g.s) * g.c + q.ch * V, g.w * g.c};
}

// Per lane: the window position (ky * k + kx) of the maximum, and its value.
template <typename T, typename I>
__device__ __forceinline__ void tiled_argmax(const T* x, const Geom<I>& g, const TiledWindow<I>& win,
                                             int (&best)[kVectorLanes<T>], float (&best_v)[kVectorLanes<T>]) {
  constexpr int V = kVectorLanes<T>;
  for (I ky = 0; ky < g.k; ++ky)
    for (I kx = 0; kx < g.k; ++kx) {
      const VecPack<T> in = *reinterpret_cast<const VecPack<T>*>(x + win.first + ky * win.row_step + kx * g.c);
      const int pos = static_cast<int>(ky * g.k + kx);
#pragma unroll
      for (int l = 0; l < V; ++l) {
        const float v = to_float(in.v[l]);
        if (pos == 0 || v > best_v[l] || isnan(v)) {
          best[l] = pos;
          best_v[l] = v;
        }
      }
    }
}

template <typename T, typename I>
__global__ void maxpool_tiled_nhwc_forward_kernel(const T* __restrict__ x, T* __restrict__ y, Geom<I> g) {
  constexpr int V = kVectorLanes<T>;
  const I total = g.n * g.oh * g.ow * (g.c / V);
  for (I t = static_cast<I>(global_thread()); t < total; t += static_cast<I>(grid_threads())) {
    int best[V];
    float best_v[V];
    tiled_argmax<T, I>(x, g, tiled_window<T, I>(t, g), best, best_v);
    VecPack<T> out;
#pragma unroll
    for (int l = 0; l < V; ++l) out.v[l] = from_float<T>(best_v[l]);
    reinterpret_cast<VecPack<T>*>(y)[t] = out;  // y is [n, oh, ow, c]: vector t is output pixel t / (c / V)
  }
}

template <typename T, typename I>
__global__ void maxpool_tiled_nhwc_backward_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                                   T* __restrict__ dx, Geom<I> g) {
  constexpr int V = kVectorLanes<T>;
  const I total = g.n * g.oh * g.ow * (g.c / V);
  for (I t = static_cast<I>(global_thread()); t < total; t += static_cast<I>(grid_threads())) {
    const TiledWindow<I> win = tiled_window<T, I>(t, g);
    int best[V];
    float best_v[V];
    tiled_argmax<T, I>(x, g, win, best, best_v);
    const VecPack<T> grad = reinterpret_cast<const VecPack<T>*>(dy)[t];
    for (I ky = 0; ky < g.k; ++ky)
      for (I kx = 0; kx < g.k; ++kx) {
        const int pos = static_cast<int>(ky * g.k + kx);
        VecPack<T> out;
#pragma unroll
        for (int l = 0; l < V; ++l)  // 0 + dy, as the generic kernel's sum: -0 becomes +0 there too
          out.v[l] = from_float<T>(best[l] == pos ? 0.0f + to_float(grad.v[l]) : 0.0f);
        *reinterpret_cast<VecPack<T>*>(dx + win.first + ky * win.row_step + kx * g.c) = out;
      }
  }
}


// Max pooling in NHWC where windows overlap or are padded (the ResNet stem's 3x3/2 with padding 1): forward
// keeps the window position of each output element's maximum (one byte, ky * k + kx in the unpadded window),
// so that backward reads it instead of searching every window that covers an input element again. A thread
// handles L channels of one output pixel (forward) or input pixel (backward): 16-byte vectors where the
// channels and pointers allow, else L = 1. The same argmax rule and the same sums, in the same order, as the
// generic kernels, so the results are identical.
template <typename T, int L, typename I>
__global__ void maxpool_nhwc_positions_forward_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                      uint8_t* __restrict__ positions, Geom<I> g) {
  const I groups = g.c / L;
  const I total = g.n * g.oh * g.ow * groups;
  for (I t = static_cast<I>(global_thread()); t < total; t += static_cast<I>(grid_threads())) {
    const Coord<I> q = decode<true, I>(t, groups, g.oh, g.ow);  // q.ch: the group of L channels
    const ClippedWindow<I> win = clipped_window(g, q.y, q.x);
    const T* image = x + q.img * g.h * g.w * g.c + q.ch * L;
    int best[L];
    float best_v[L];
    bool first = true;  // the window's first cell inside the image starts the search
    for (I yy = win.y_lo; yy < win.y_hi; ++yy)
      for (I xx = win.x_lo; xx < win.x_hi; ++xx) {
        const Lanes<T, L> in = *reinterpret_cast<const Lanes<T, L>*>(image + (yy * g.w + xx) * g.c);
        const int pos = static_cast<int>((yy - win.y0) * g.k + (xx - win.x0));
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const float v = to_float(in.v[l]);
          if (first || v > best_v[l] || isnan(v)) {
            best[l] = pos;
            best_v[l] = v;
          }
        }
        first = false;
      }
    Lanes<T, L> out;
    PositionLanes<L> where;
#pragma unroll
    for (int l = 0; l < L; ++l) {
      out.v[l] = from_float<T>(best_v[l]);
      where.v[l] = static_cast<uint8_t>(best[l]);
    }
    reinterpret_cast<Lanes<T, L>*>(y)[t] = out;  // y is [n, oh, ow, c]: group t starts at element t * L
    if (positions) reinterpret_cast<PositionLanes<L>*>(positions)[t] = where;
  }
}

template <typename T, int L, typename I>
__global__ void maxpool_nhwc_positions_backward_kernel(const uint8_t* __restrict__ positions,
                                                       const T* __restrict__ dy, T* __restrict__ dx, Geom<I> g) {
  const I groups = g.c / L;
  const I total = g.n * g.h * g.w * groups;
  for (I t = static_cast<I>(global_thread()); t < total; t += static_cast<I>(grid_threads())) {
    const Coord<I> q = decode<true, I>(t, groups, g.h, g.w);  // q.ch: the group of L channels
    const I group = q.ch, yy = q.y, xx = q.x, img = q.img;
    I oy_first, oy_last, ox_first, ox_last;
    covering<I>(yy + g.pad, g.k, g.s, g.oh, oy_first, oy_last);
    covering<I>(xx + g.pad, g.k, g.s, g.ow, ox_first, ox_last);
    float sum[L];
#pragma unroll
    for (int l = 0; l < L; ++l) sum[l] = 0.0f;
    for (I oy = oy_first; oy <= oy_last; ++oy)
      for (I ox = ox_first; ox <= ox_last; ++ox) {
        const I o = ((img * g.oh + oy) * g.ow + ox) * groups + group;
        const int pos = static_cast<int>((yy + g.pad - oy * g.s) * g.k + (xx + g.pad - ox * g.s));
        const PositionLanes<L> where = reinterpret_cast<const PositionLanes<L>*>(positions)[o];
        const Lanes<T, L> grad = reinterpret_cast<const Lanes<T, L>*>(dy)[o];
#pragma unroll
        for (int l = 0; l < L; ++l)
          if (where.v[l] == pos) sum[l] += to_float(grad.v[l]);
      }
    Lanes<T, L> out;
#pragma unroll
    for (int l = 0; l < L; ++l) out.v[l] = from_float<T>(sum[l]);
    reinterpret_cast<Lanes<T, L>*>(dx)[t] = out;
  }
}

// Whether the tiled NHWC kernels' geometry holds (their pointers must also be 16-byte aligned).
bool tiled_geometry(const Geometry& g, Layout layout, DType dtype) {
  const int64_t lanes = 16 / static_cast<int64_t>(dtype_size(dtype));
  return layout == Layout::NHWC && g.pad == 0 && g.k == g.s && g.h % g.k == 0 && g.w % g.k == 0 && g.c % lanes == 0;
}

constexpr int64_t kMaxPositionCells = 256;  // a position is one byte

bool keeps_positions(const Geometry& g, Layout layout, DType dtype) {
  return layout == Layout::NHWC && !tiled_geometry(g, layout, dtype) && g.k * g.k <= kMaxPositionCells;
}

bool aligned16(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// Whether the tiled NHWC kernels apply.
bool tiled_nhwc(const Geometry& g, Layout layout, DType dtype, std::initializer_list<const void*> pointers) {
  return tiled_geometry(g, layout, dtype) && aligned16(pointers);
}

// Runs f(TypeTag<T>, integral_constant<int, L>, TypeTag<I>): 16-byte vectors of channels where c and the
// pointers allow, else one channel a thread.
template <typename F>
void dispatch_lanes(const Geometry& g, DType dtype, std::initializer_list<const void*> pointers, F&& f) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVector = kVectorLanes<T>;
    auto with_lanes = [&](auto lanes) {
      dispatch_index(g.n * g.c * g.h * g.w, [&](auto index) { f(tag, lanes, index); });
    };
    if (g.c % kVector == 0 && aligned16(pointers))
      with_lanes(std::integral_constant<int, kVector>{});
    else
      with_lanes(std::integral_constant<int, 1>{});
  });
}

template <typename T, bool Nhwc, typename I>
__global__ void avgpool_forward_kernel(const T* __restrict__ x, T* __restrict__ y, Geom<I> g, float inv_area) {
  const I total = g.n * g.c * g.oh * g.ow;
  const I step_x = Nhwc ? g.c : 1, step_y = Nhwc ? g.w * g.c : g.w;
  for (I o = static_cast<I>(global_thread()); o < total; o += static_cast<I>(grid_threads())) {
    const Coord<I> q = decode<Nhwc, I>(o, g.c, g.oh, g.ow);
    const I first = offset<Nhwc, I>(q.img, q.ch, q.y * g.s, q.x * g.s, g.c, g.h, g.w);
    float sum = 0.0f;
    for (I ky = 0; ky < g.k; ++ky)
      for (I kx = 0; kx < g.k; ++kx) sum += to_float(x[first + ky * step_y + kx * step_x]);
    y[o] = from_float<T>(sum * inv_area);
  }
}

template <typename T, bool Nhwc, typename I>
__global__ void avgpool_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, Geom<I> g, float inv_area) {
  const I total = g.n * g.c * g.h * g.w;
  for (I i = static_cast<I>(global_thread()); i < total; i += static_cast<I>(grid_threads()))
    dx[i] = from_float<T>(gather_windows<Nhwc, I>(i, g, [&](float& sum, const Coord<I>& q, I oy, I ox) {
      sum += to_float(dy[offset<Nhwc, I>(q.img, q.ch, oy, ox, g.c, g.oh, g.ow)]) * inv_area;
    }));
}

// Global average pool, NCHW: a warp per (n, c) plane of hw contiguous elements.
template <typename T>
__global__ void global_avgpool_nchw_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t planes, int64_t hw,
                                           float inv_area) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t p = global_thread() / 32; p < planes; p += warps) {
    const T* plane = x + p * hw;
    float sum = 0.0f;
    for (int64_t i = lane; i < hw; i += 32) sum += to_float(plane[i]);
    sum = warp_sum(sum);
    if (lane == 0) y[p] = from_float<T>(sum * inv_area);
  }
}

// Global average pool, NHWC: a thread per (n, c); a warp's threads read 32 consecutive channels of a pixel.
template <typename T>
__global__ void global_avgpool_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, int64_t c,
                                           int64_t hw, float inv_area) {
  for (int64_t t = global_thread(); t < n * c; t += grid_threads()) {
    const int64_t img = t / c, ch = t - img * c;
    const T* base = x + img * hw * c + ch;
    float sum = 0.0f;
    for (int64_t i = 0; i < hw; ++i) sum += to_float(base[i * c]);
    y[t] = from_float<T>(sum * inv_area);
  }
}

template <typename T, bool Nhwc, typename I>
__global__ void global_avgpool_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, I c, I hw, I total,
                                               float inv_area) {
  for (I i = static_cast<I>(global_thread()); i < total; i += static_cast<I>(grid_threads())) {
    I img, ch;
    if constexpr (Nhwc) {
      ch = i % c;
      img = i / (hw * c);
    } else {
      const I plane = i / hw;
      ch = plane % c;
      img = plane / c;
    }
    dx[i] = from_float<T>(to_float(dy[img * c + ch]) * inv_area);
  }
}

// NHWC with whole 16-byte vectors of channels: a thread writes one pixel's vector with one store (the
// scalar kernel's 2-byte stores left the pass at a fifth of the memory's rate); each value is the scalar
// kernel's product.
template <typename T, typename I>
__global__ void global_avgpool_backward_vector_kernel(const T* __restrict__ dy, T* __restrict__ dx, I c, I hw,
                                                      I vectors, float inv_area) {
  constexpr int V = kVectorLanes<T>;
  for (I i = static_cast<I>(global_thread()); i < vectors; i += static_cast<I>(grid_threads())) {
    const I first = i * V;
    const I ch = first % c, img = first / (hw * c);
    const VecPack<T> g = *reinterpret_cast<const VecPack<T>*>(dy + img * c + ch);
    VecPack<T> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = from_float<T>(to_float(g.v[k]) * inv_area);
    reinterpret_cast<VecPack<T>*>(dx)[i] = out;
  }
}

// Runs f(TypeTag<T>, bool_constant<Nhwc>, TypeTag<I>) for the run-time dtype, layout and index width.
template <typename F>
void dispatch(DType dtype, Layout layout, int64_t elements, F&& f) {
  dispatch_dtype(dtype, [&](auto tag) {
    auto with_layout = [&](auto nhwc) {
      dispatch_index(elements, [&](auto index) { f(tag, nhwc, index); });
    };
    if (layout == Layout::NHWC)
      with_layout(std::true_type{});
    else
      with_layout(std::false_type{});
  });
}

}  // namespace

bool maxpool_keeps_positions_at_any_size(int kernel, int stride, int pad, Layout layout) {
  // Windows that overlap or are padded never tile (tiled_geometry), whatever the input.
  return layout == Layout::NHWC && (pad != 0 || kernel != stride) && int64_t{kernel} * kernel <= kMaxPositionCells;
}

int64_t maxpool_positions_bytes(const PoolShape& shape, Layout layout, DType dtype) {
  const Geometry g = make_geometry(shape, "maxpool_positions_bytes");
  return keeps_positions(g, layout, dtype) ? g.n * g.c * g.oh * g.ow : 0;
}

void maxpool_forward(const void* x, void* y, const PoolShape& shape, Layout layout, DType dtype, cudaStream_t stream,
                     uint8_t* positions) {
  const Geometry g = make_geometry(shape, "maxpool_forward");
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total <= 0) return;
  if (keeps_positions(g, layout, dtype)) {
    dispatch_lanes(g, dtype, {x, y, positions}, [&](auto tag, auto lanes, auto index) {
      using T = typename decltype(tag)::type;
      using I = typename decltype(index)::type;
      constexpr int L = decltype(lanes)::value;
      maxpool_nhwc_positions_forward_kernel<T, L, I><<<grid_for(total / L), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), positions, Geom<I>(g));
    });
    CHECK_CUDA_LAUNCH();
    return;
  }
  if (positions) fatal("maxpool_forward: this window keeps no positions (maxpool_positions_bytes is 0)");
  if (tiled_nhwc(g, layout, dtype, {x, y})) {
    dispatch(dtype, layout, g.n * g.c * g.h * g.w, [&](auto tag, auto, auto index) {
      using T = typename decltype(tag)::type;
      using I = typename decltype(index)::type;
      maxpool_tiled_nhwc_forward_kernel<T, I><<<grid_for(total / kVectorLanes<T>), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), Geom<I>(g));
    });
    CHECK_CUDA_LAUNCH();
    return;
  }
  dispatch(dtype, layout, g.n * g.c * g.h * g.w, [&](auto tag, auto nhwc, auto index) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    constexpr bool kNhwc = decltype(nhwc)::value;
    auto* const kernel =
        g.pad > 0 ? maxpool_forward_kernel<T, kNhwc, true, I> : maxpool_forward_kernel<T, kNhwc, false, I>;
    kernel<<<grid_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), Geom<I>(g));
  });
  CHECK_CUDA_LAUNCH();
}

void maxpool_backward(const void* x, const void* dy, void* dx, const PoolShape& shape, Layout layout, DType dtype,
                      cudaStream_t stream, const uint8_t* positions) {
  const Geometry g = make_geometry(shape, "maxpool_backward");
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  if (positions) {
    if (!keeps_positions(g, layout, dtype))
      fatal("maxpool_backward: this window keeps no positions (maxpool_positions_bytes is 0)");
    dispatch_lanes(g, dtype, {dy, dx, positions}, [&](auto tag, auto lanes, auto index) {
      using T = typename decltype(tag)::type;
      using I = typename decltype(index)::type;
      constexpr int L = decltype(lanes)::value;
      maxpool_nhwc_positions_backward_kernel<T, L, I><<<grid_for(total / L), kThreads, 0, stream>>>(
          positions, static_cast<const T*>(dy), static_cast<T*>(dx), Geom<I>(g));
    });
    CHECK_CUDA_LAUNCH();
    return;
  }
  if (tiled_nhwc(g, layout, dtype, {x, dy, dx})) {
    dispatch(dtype, layout, total, [&](auto tag, auto, auto index) {
      using T = typename decltype(tag)::type;
      using I = typename decltype(index)::type;
      maxpool_tiled_nhwc_backward_kernel<T, I><<<grid_for(g.n * g.c * g.oh * g.ow / kVectorLanes<T>), kThreads, 0,
                                                  stream>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                            static_cast<T*>(dx), Geom<I>(g));
    });
    CHECK_CUDA_LAUNCH();
    return;
  }
  dispatch(dtype, layout, total, [&](auto tag, auto nhwc, auto index) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    constexpr bool kNhwc = decltype(nhwc)::value;
    auto* const kernel =
        g.pad > 0 ? maxpool_backward_kernel<T, kNhwc, true, I> : maxpool_backward_kernel<T, kNhwc, false, I>;
    kernel<<<grid_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                     static_cast<T*>(dx), Geom<I>(g));
  });
  CHECK_CUDA_LAUNCH();
}

void avgpool_forward(const void* x, void* y, const PoolShape& shape, Layout layout, DType dtype, cudaStream_t stream) {
  const Geometry g = unpadded_geometry(shape, "avgpool_forward");
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total <= 0) return;
  const float inv_area = 1.0f / static_cast<float>(g.k * g.k);
  dispatch(dtype, layout, g.n * g.c * g.h * g.w, [&](auto tag, auto nhwc, auto index) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    avgpool_forward_kernel<T, decltype(nhwc)::value, I><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), Geom<I>(g), inv_area);
  });
  CHECK_CUDA_LAUNCH();
}

void avgpool_backward(const void* dy, void* dx, const PoolShape& shape, Layout layout, DType dtype,
                      cudaStream_t stream) {
  const Geometry g = unpadded_geometry(shape, "avgpool_backward");
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  const float inv_area = 1.0f / static_cast<float>(g.k * g.k);
  dispatch(dtype, layout, total, [&](auto tag, auto nhwc, auto index) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    avgpool_backward_kernel<T, decltype(nhwc)::value, I><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), Geom<I>(g), inv_area);
  });
  CHECK_CUDA_LAUNCH();
}

void global_avgpool_forward(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                            DType dtype, cudaStream_t stream) {
  const int64_t hw = h * w;
  if (n * c <= 0 || hw <= 0) return;
  const float inv_area = 1.0f / static_cast<float>(hw);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (layout == Layout::NHWC && hw > 1)
      global_avgpool_nhwc_kernel<T><<<grid_for(n * c), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                              static_cast<T*>(y), n, c, hw, inv_area);
    else
      global_avgpool_nchw_kernel<T><<<grid_for(n * c * 32), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n * c, hw, inv_area);
  });
  CHECK_CUDA_LAUNCH();
}

void global_avgpool_backward(const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                             DType dtype, cudaStream_t stream) {
  const int64_t hw = h * w, total = n * c * hw;
  if (total <= 0) return;
  const float inv_area = 1.0f / static_cast<float>(hw);
  dispatch(dtype, layout, total, [&](auto tag, auto nhwc, auto index) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    constexpr int V = kVectorLanes<T>;
    if (decltype(nhwc)::value && c % V == 0 && aligned16({dy, dx})) {
      global_avgpool_backward_vector_kernel<T, I><<<grid_for(total / V), kThreads, 0, stream>>>(
          static_cast<const T*>(dy), static_cast<T*>(dx), static_cast<I>(c), static_cast<I>(hw),
          static_cast<I>(total / V), inv_area);
      return;
    }
    global_avgpool_backward_kernel<T, decltype(nhwc)::value, I><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), static_cast<I>(c), static_cast<I>(hw), static_cast<I>(total),
        inv_area);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
