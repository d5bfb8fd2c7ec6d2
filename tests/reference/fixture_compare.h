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

// One group of fixtures.h5 (tests/reference/README.md). Tensors of params, sgd and adadelta may hold
// only a leading part of the flattened tensor (large tensors are cut to keep the file small).
struct Fixture {
  ReferenceCase c;
  Shape input_shape;
  std::vector<float> input;
  std::vector<int32_t> labels;
  std::vector<double> output;
  double loss = 0.0;
  double sgd_lr = 0.1, sgd_momentum = 0.9, adadelta_lr = 1.0, adadelta_rho = 0.9, adadelta_eps = 1e-6;
  Tensors params, buffers, grads, buffers_after, sgd_params, adadelta_params;
};

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
  static const std::vector<std::string> groups{"mnist-cnn", "wrn-small"};
  return groups;
}

}  // namespace sb::reference
