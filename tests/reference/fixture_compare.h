// The PyTorch-oracle fixture in memory, and norm-wise comparisons against it, shared by the CPU test
// (tests/unit/test_reference_fixture.cpp) and the GPU test (tests/gpu/test_reference_fixture_gpu.cpp).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "reference/fixture_io.h"

namespace sb::reference {

using Tensors = std::map<std::string, std::vector<double>>;  // by ParamSpec name

// One group of fixtures.h5 (tests/reference/README.md). Tensors of params, sgd and adadelta (and, for the
// ResNets, grads) may hold only a leading part of the flattened tensor (cut to keep the file small).
struct Fixture {
  ReferenceCase c;
  Shape input_shape;
  std::vector<float> input;
  std::vector<int32_t> labels;
  std::vector<double> output;
  double loss = 0.0;
  double sgd_lr = 0.1, sgd_momentum = 0.9, adadelta_lr = 1.0, adadelta_rho = 0.9, adadelta_eps = 1e-6;
  // How far PyTorch's own fp32 CUDA step fell from its fp64 oracle (largest relative L2 of output, loss
  // and gradients); 0 where the fixture was made without a GPU.
  double torch_fp32_distance = 0.0;
  Tensors params, buffers, grads, buffers_after, sgd_params, adadelta_params;
};

// A deep network's fp32 step is only as close to the fp64 oracle as its conditioning lets any fp32 step
// be: through resnet50's batch norms PyTorch's own fp32 step is 1e-2 off on a few gradients. A case is
// conditioning-limited where PyTorch's own fp32 step takes more than half the usual 1e-5; its fp32 bound
// is then 4x PyTorch's distance. The fp64 step (to 1e-6) is what shows that the maths is PyTorch's.
inline constexpr double kFp32Tolerance = 1e-5;
inline bool conditioning_limited(const Fixture& f) { return f.torch_fp32_distance > 0.5 * kFp32Tolerance; }
inline double fp32_tolerance(const Fixture& f) {
  return conditioning_limited(f) ? 4.0 * f.torch_fp32_distance : kFp32Tolerance;
}

inline Tensors read_tensors(hid_t file, const std::string& group, const std::vector<ParamSpec>& specs) {
  Tensors out;
  for (const ParamSpec& s : specs) out[s.name] = read_all<double>(file, group + "/" + s.name);
  return out;
}

// Reads the group for a network whose parameter and buffer specs are given (names must all be there).
inline Fixture read_fixture(hid_t file, const std::string& group, const std::vector<ParamSpec>& params,
                            const std::vector<ParamSpec>& buffers) {
  Fixture f;
  f.c = read_case(file, group);
  std::vector<int64_t> shape;
  f.input = read_all<float>(file, group + "/input", &shape);
  f.input_shape = Shape(shape);
  f.labels = read_all<int32_t>(file, group + "/labels");
  f.output = read_all<double>(file, group + "/output");
  f.loss = read_all<double>(file, group + "/loss").at(0);
  h5::Handle g = h5::Handle::group(CHECK_HDF5(H5Gopen2(file, group.c_str(), H5P_DEFAULT)));
  f.sgd_lr = h5::read_double_attribute(g.get(), "sgd_lr");
  f.sgd_momentum = h5::read_double_attribute(g.get(), "sgd_momentum");
  f.adadelta_lr = h5::read_double_attribute(g.get(), "adadelta_lr");
  f.adadelta_rho = h5::read_double_attribute(g.get(), "adadelta_rho");
  f.adadelta_eps = h5::read_double_attribute(g.get(), "adadelta_eps");
  if (h5::has_attribute(g.get(), "torch_cuda_fp32_max_rel_error"))
    f.torch_fp32_distance = h5::read_double_attribute(g.get(), "torch_cuda_fp32_max_rel_error");
  f.params = read_tensors(file, group + "/params", params);
  f.grads = read_tensors(file, group + "/grads", params);
  f.sgd_params = read_tensors(file, group + "/sgd/params", params);
  f.adadelta_params = read_tensors(file, group + "/adadelta/params", params);
  f.buffers = read_tensors(file, group + "/buffers", buffers);
  f.buffers_after = read_tensors(file, group + "/buffers_after", buffers);
  return f;
}

// ||got - want|| / ||want|| over want.size() leading elements of got (0 when both are zero).
template <typename T>
double rel_l2(const T* got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  if (den == 0.0) return std::sqrt(num);
  return std::sqrt(num / den);  // NaN in got stays NaN: it never passes a <= test
}

// Compares every tensor of a flat buffer with the fixture's, per tensor; reports each one over `tol`
// and returns the largest error (NaN counts as infinite).
template <typename T>
double check_tensors(const std::string& what, const T* flat, const std::vector<ParamSpec>& specs, const Tensors& want,
                     double tol) {
  double worst = 0.0;
  std::string worst_name;
  for (const ParamSpec& s : specs) {
    const std::vector<double>& w = want.at(s.name);
    EXPECT_LE(static_cast<int64_t>(w.size()), s.shape.numel()) << what << " " << s.name;
    const double err = rel_l2(flat + s.offset, w);
    EXPECT_LE(err, tol) << what << ": " << s.name << " off by " << err << " (relative L2)";
    const double e = std::isnan(err) ? INFINITY : err;
    if (e >= worst) {
      worst = e;
      worst_name = s.name;
    }
  }
  std::printf("[reference] %-40s worst %.3g (%s)\n", what.c_str(), worst, worst_name.c_str());
  return worst;
}

// One relative L2 error over all tensors together (each over the elements the fixture holds): the
// bf16 measure, where a small tensor's own error can be large without harm.
template <typename T>
double global_rel_l2(const T* flat, const std::vector<ParamSpec>& specs, const Tensors& want) {
  double num = 0.0, den = 0.0;
  for (const ParamSpec& s : specs) {
    const std::vector<double>& w = want.at(s.name);
    for (size_t i = 0; i < w.size(); ++i) {
      const double d = static_cast<double>(flat[s.offset + static_cast<int64_t>(i)]) - w[i];
      num += d * d;
      den += w[i] * w[i];
    }
  }
  return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

inline double rel_scalar(double got, double want) { return std::fabs(got - want) / std::max(std::fabs(want), 1e-30); }

// The fixture, or an empty path when there is none (the test then skips: the fixture is made on a GPU
// node with PyTorch, by tests/reference/make_fixtures.py).
inline std::string existing_fixture() {
  const std::string path = fixture_path();
  return std::filesystem::is_regular_file(path) ? path : std::string();
}

inline constexpr const char* kNoFixture =
    "no PyTorch fixture: run tests/reference/make_fixtures.py on a node with PyTorch (tests/reference/README.md), "
    "or set SCALEBENCH_REFERENCE_FIXTURE";

// The fixture's groups: one per network.
inline const std::vector<std::string>& fixture_groups() {
  static const std::vector<std::string> groups{"mnist-cnn", "wrn-small", "resnet18", "resnet50"};
  return groups;
}

}  // namespace sb::reference
