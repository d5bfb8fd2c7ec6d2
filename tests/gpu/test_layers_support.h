// Shared harness of the CUDA layer tests: runs one layer spec on the CPU reference (sb::cpu layers in
// double) and on the CUDA path (sb::cuda layers) from the same random parameters, buffers, input and
// output gradient, and returns the relative L2 errors of y, dx, the parameter gradients and the buffers.
// Inputs and weights are rounded to the compute dtype first, so the reference sees what the GPU sees.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "nn/cpu/factory.h"
#include "nn/cuda/context.h"
#include "nn/cuda/factory.h"
#include "nn/cuda/tensor_util.h"
#include "nn/spec.h"

namespace sb::layertest {

using gputest::DeviceMem;

// The views a layer binds: the fp32 master parameters and their gradients, the parameters' compute-dtype
// copy (the master itself in fp32) and the fp32 buffers.
inline cuda::ParamViews layer_views(DeviceMem& params, DeviceMem& grads, DeviceMem& compute, DeviceMem& buffers,
                                    DType dtype) {
  cuda::ParamViews views;
  views.params = params.as<float>();
  views.grads = grads.as<float>();
  views.compute_params = dtype == DType::F32 ? params.get() : compute.get();
  views.buffers = buffers.as<float>();
  views.compute = dtype;
  return views;
}

// A folder of its own for one test's on-disk plan cache, removed before and after.
struct PlanCacheFolder {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("sb-plans-" + std::to_string(::getpid()) + "-" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  PlanCacheFolder() { std::filesystem::remove_all(path); }
  ~PlanCacheFolder() { std::filesystem::remove_all(path); }
};

// The precisions the layers support and their tolerances (relative L2 error).
struct Precision {
  const char* name;
  DType dtype;
  bool tf32;
  double tol;
};
inline const Precision kPrecisions[] = {{"fp32", DType::F32, false, 1e-5},
                                        {"tf32", DType::F32, true, 1e-3},
                                        {"bf16", DType::BF16, false, 2e-2},
                                        {"fp16", DType::F16, false, 2e-2}};
inline const Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

inline cuda::ContextOptions options_for(const Precision& p, Layout layout) {
  cuda::ContextOptions o;
  o.compute = p.dtype;
  o.tf32 = p.tf32;
  o.layout = layout;
  o.autotune_candidates = 3;  // plans are built per fresh context; runtime-compiled ones take a while
  return o;
}

inline std::string label(const Precision& p, Layout layout, const std::string& what) {
  return std::string(p.name) + "/" + layout_name(layout) + " " + what;
}

struct LayerCase {
  LayerSpec spec;
  Shape input;
  cuda::Mode mode = cuda::Mode::Train;
  bool backward = true;
  uint64_t stream_key = 0, step = 0;  // dropout
};

struct Errors {
  double y = 0, dx = 0, grads = 0, buffers = 0;
  std::string str() const {
    char s[160];
    std::snprintf(s, sizeof(s), "y %.3g dx %.3g grads %.3g buffers %.3g", y, dx, grads, buffers);
    return s;
  }
  double worst() const {  // NaN anywhere is the worst
    double w = 0;
    for (double v : {y, dx, grads, buffers}) w = std::isnan(v) ? INFINITY : std::max(w, v);
    return w;
  }
};

inline double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  std::vector<float> w(want.begin(), want.end());
  return gputest::rel_l2(got, w);
}

inline std::vector<float> normal_values(size_t n, std::mt19937_64& rng, DType dtype) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = gputest::quantize(d(rng), dtype);
  return v;
}

// PyTorch's initial values, except that Ones/Zeros parameters (BN) get random values near them so that
// every term of the formulas is exercised; buffers (BN statistics) are random too.
inline std::vector<float> case_params(const LayerSpec& spec, uint64_t seed, DType dtype, std::mt19937_64& rng) {
  const auto specs = collect_params(spec);
  std::vector<float> p(static_cast<size_t>(count_elements(specs)));
  initialize_flat(specs, seed, p.data());
  std::uniform_real_distribution<float> around_one(0.5f, 1.5f), around_zero(-0.5f, 0.5f);
  for (const auto& s : specs)
    for (int64_t i = 0; i < s.shape.numel(); ++i) {
      float& v = p[static_cast<size_t>(s.offset + i)];
      if (s.init == ParamInit::Ones) v = around_one(rng);
      if (s.init == ParamInit::Zeros) v = around_zero(rng);
    }
  gputest::quantize(p, dtype);  // the compute copy then equals the master exactly
  return p;
}
inline std::vector<float> case_buffers(const LayerSpec& spec, std::mt19937_64& rng) {
  const auto specs = collect_buffers(spec);
  std::vector<float> b(static_cast<size_t>(count_elements(specs)));
  std::uniform_real_distribution<float> mean(-0.3f, 0.3f), var(0.2f, 2.0f);
  for (const auto& s : specs)
    for (int64_t i = 0; i < s.shape.numel(); ++i)
      b[static_cast<size_t>(s.offset + i)] = s.init == ParamInit::Ones ? var(rng) : mean(rng);
  return b;
}

// Host values of a 4-d (or 2-d) tensor, NCHW order, to and from the device's layout.
inline std::vector<float> to_device_order(const std::vector<float>& nchw, const Shape& s, Layout layout) {
  return s.rank() == 4 ? gputest::to_layout(nchw, layout, s[0], s[1], s[2], s[3]) : nchw;
}
inline std::vector<float> from_device(const cuda::DeviceTensor& t) {
  std::vector<float> v = gputest::download(t.data, static_cast<size_t>(t.numel()), t.dtype());
  const Shape& s = t.shape();
  return s.rank() == 4 ? gputest::from_layout(v, t.layout(), s[0], s[1], s[2], s[3]) : v;
}

inline Tensor<double> host_tensor(const std::vector<float>& v, const Shape& s) {
  Tensor<double> t(s);
  for (size_t i = 0; i < v.size(); ++i) t[static_cast<int64_t>(i)] = v[i];
  return t;
}
inline std::vector<double> values(const Tensor<double>& t) { return t.storage(); }

// Prints what the plan cache chose (the material of docs/cudnn.md).
inline void print_plans(cuda::Context& ctx, const std::string& title) {
  for (const auto& r : ctx.plans().reports())
    std::printf("[plan] %s | %s | %s | choice %d of %d (built %d) | %.4f ms | ws %lld%s%s\n", title.c_str(),
                r.key.c_str(), r.ok ? r.engine.c_str() : "NO ENGINE", r.choice, r.heuristics, r.built, r.ms,
                static_cast<long long>(r.workspace), r.why.empty() ? "" : " | ", r.why.c_str());
  std::fflush(stdout);
}

// Runs the case on both backends. ctx may be shared across cases (its plan cache then persists).
inline Errors run_case(const LayerCase& c, cuda::Context& ctx, uint64_t seed) {
  const DType dtype = ctx.compute_dtype();
  std::mt19937_64 rng(seed);
  const std::vector<float> params = case_params(c.spec, seed, dtype, rng);
  const std::vector<float> buffers = case_buffers(c.spec, rng);
  const std::vector<float> x = normal_values(static_cast<size_t>(c.input.numel()), rng, dtype);
  const size_t np = params.size(), nb = buffers.size();

  // CPU reference in double.
  auto ref = cpu::make_layer<double>(c.spec);
  std::vector<double> ref_params(params.begin(), params.end()), ref_grads(np, 0.0), ref_buffers(buffers.begin(), buffers.end());
  ref->bind(np ? ref_params.data() : nullptr, np ? ref_grads.data() : nullptr, nb ? ref_buffers.data() : nullptr);
  ref->set_random_stream(c.stream_key, c.step);
  const Tensor<double> x_host = host_tensor(x, c.input);  // must outlive the reference's backward
  const Tensor<double>& ref_y = ref->forward(x_host, c.mode);
  const Shape y_shape = ref_y.shape();
  const std::vector<double> ref_y_values = values(ref_y);
  const std::vector<float> dy = normal_values(static_cast<size_t>(y_shape.numel()), rng, dtype);
  std::vector<double> ref_dx;
  const Tensor<double> dy_host = host_tensor(dy, y_shape);
  if (c.backward) ref_dx = values(ref->backward(dy_host));

  // CUDA path.
  auto layer = cuda::make_layer(c.spec, ctx);
  DeviceMem d_params(np * 4 + 4), d_grads(np * 4 + 4), d_compute(np * dtype_size(dtype) + 4), d_buffers(nb * 4 + 4);
  gputest::upload(params, DType::F32, d_params.get());
  gputest::upload(params, dtype, d_compute.get());
  gputest::upload(buffers, DType::F32, d_buffers.get());
  d_grads.poison();  // every gradient must be written
  layer->bind(layer_views(d_params, d_grads, d_compute, d_buffers, dtype));
  layer->set_random_stream(c.stream_key, c.step);

  DeviceMem d_x(x.size() * dtype_size(dtype));
  gputest::upload(to_device_order(x, c.input, ctx.layout()), dtype, d_x.get());
  cuda::DeviceTensor xt{d_x.get(), TensorDesc{c.input, dtype, cuda::layout_for(c.input, ctx)}};
  const cuda::DeviceTensor& y = layer->forward(xt, c.mode);
  Errors e;
  EXPECT_EQ(y.shape(), y_shape);
  e.y = rel_error(from_device(y), ref_y_values);
  if (c.backward) {
    DeviceMem d_dy(dy.size() * dtype_size(dtype));
    gputest::upload(to_device_order(dy, y_shape, y.layout()), dtype, d_dy.get());
    cuda::DeviceTensor dyt{d_dy.get(), TensorDesc{y_shape, dtype, y.layout()}};
    const cuda::DeviceTensor& dx = layer->backward(dyt);
    e.dx = rel_error(from_device(dx), ref_dx);
    if (np) e.grads = rel_error(gputest::download(d_grads.get(), np, DType::F32), ref_grads);
  }
  if (nb && c.mode == cuda::Mode::Train)
    e.buffers = rel_error(gputest::download(d_buffers.get(), nb, DType::F32), ref_buffers);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return e;
}

// Runs the case in every precision and layout, each in a fresh context, and checks the tolerances: the
// precision's for everything, or, given gradient_tolerance, that one for dx and the gradients (a block of
// several layers, whose ReLUs may flip near zero; the y and statistics keep the precision's).
inline void check_everywhere(const LayerCase& c, const std::string& what, uint64_t seed,
                             void (*tweak)(cuda::ContextOptions&) = nullptr,
                             double (*gradient_tolerance)(const Precision&) = nullptr) {
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::ContextOptions o = options_for(p, layout);
      if (tweak) tweak(o);
      cuda::Context ctx(o);
      const Errors e = run_case(c, ctx, seed);
      const std::string name = label(p, layout, what);
      std::printf("[case] %-48s %s\n", name.c_str(), e.str().c_str());
      std::fflush(stdout);
      const double grad_tol = gradient_tolerance ? gradient_tolerance(p) : p.tol;
      EXPECT_LE(e.y, p.tol) << name << ": " << e.str();
      EXPECT_LE(e.buffers, p.tol) << name << ": " << e.str();
      EXPECT_LE(e.dx, grad_tol) << name << ": " << e.str();
      EXPECT_LE(e.grads, grad_tol) << name << ": " << e.str();
      if (!(e.y <= p.tol && e.buffers <= p.tol && e.dx <= grad_tol && e.grads <= grad_tol)) print_plans(ctx, name);
    }
}

}  // namespace sb::layertest
