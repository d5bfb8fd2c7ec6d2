// Small HDF5 helpers of the PyTorch-oracle fixture: whole datasets of numbers in and out by path, and
// the layout of a fixture group (tests/reference/README.md). Header-only; built on src/h5/.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "h5/attributes.h"
#include "h5/extendible.h"
#include "h5/handle.h"
#include "reference/reference_case.h"

namespace sb::reference {

// True when every link of the '/'-separated path exists (H5Lexists needs the parents to exist).
inline bool has_path(hid_t file, const std::string& path) {
  size_t end = 0;
  while (end != std::string::npos) {
    end = path.find('/', end + 1);
    const std::string prefix = path.substr(0, end);
    if (prefix.empty() || prefix == "/") continue;
    if (CHECK_HDF5(H5Lexists(file, prefix.c_str(), H5P_DEFAULT)) <= 0) return false;
  }
  return true;
}

inline h5::Handle create_group(hid_t parent, const std::string& name) {
  return h5::Handle::group(CHECK_HDF5(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
}

// A float32 dataset of the given shape (a scalar for an empty shape).
inline void write_floats(hid_t parent, const std::string& name, const float* data, const std::vector<int64_t>& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  h5::Handle space = h5::Handle::dataspace(
      CHECK_HDF5(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  h5::Handle set = h5::Handle::dataset(CHECK_HDF5(
      H5Dcreate2(parent, name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_HDF5(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

// A whole numeric dataset converted to T (float, double or int32_t); shape gets its dimensions.
template <typename T>
std::vector<T> read_all(hid_t file, const std::string& path, std::vector<int64_t>* shape = nullptr) {
  h5::Handle set = h5::Handle::dataset(CHECK_HDF5(H5Dopen2(file, path.c_str(), H5P_DEFAULT)));
  const std::vector<hsize_t> dims = h5::shape_of(set.get());
  int64_t n = 1;
  for (hsize_t d : dims) n *= static_cast<int64_t>(d);
  if (shape) shape->assign(dims.begin(), dims.end());
  std::vector<T> out(static_cast<size_t>(n));
  hid_t type = H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, float>) type = H5T_NATIVE_FLOAT;
  if constexpr (std::is_same_v<T, int32_t>) type = H5T_NATIVE_INT32;
  if (n > 0) h5::read_whole(set.get(), type, out.data());
  return out;
}

inline h5::Handle open_read_only(const std::string& path) {
  h5::init_hdf5();
  h5::Handle access = h5::unlocked_file_access();
  return h5::Handle::file(CHECK_HDF5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get())));
}

// The fixture's network description, from the attributes of its group (e.g. "/mnist-cnn").
inline ReferenceCase read_case(hid_t file, const std::string& group) {
  h5::Handle g = h5::Handle::group(CHECK_HDF5(H5Gopen2(file, group.c_str(), H5P_DEFAULT)));
  ReferenceCase c;
  c.model = h5::read_string_attribute(g.get(), "model");
  const std::vector<int64_t> in = parse_ints(h5::read_string_attribute(g.get(), "input"), 'x');
  if (in.size() != 3) throw UserError(group + ": input should be CxHxW");
  c.input = ModelInput{in[0], in[1], in[2], h5::read_int_attribute(g.get(), "classes")};
  if (c.model == "wrn") {
    const std::vector<int64_t> w = parse_ints(h5::read_string_attribute(g.get(), "widths"), ',');
    if (w.size() != 4) throw UserError(group + ": widths should be four numbers");
    for (size_t i = 0; i < 4; ++i) c.widths[i] = w[i];
  }
  c.seed = static_cast<uint64_t>(h5::read_int_attribute(g.get(), "seed"));
  return c;
}

// Where the fixture is: $SCALEBENCH_REFERENCE_FIXTURE, else tests/reference/fixtures.h5 of the source
// tree, found from this header's own path (no CMake definition needed).
inline std::string fixture_path() {
  if (const char* env = std::getenv("SCALEBENCH_REFERENCE_FIXTURE"); env && *env) return env;
  return (std::filesystem::path(__FILE__).parent_path() / "fixtures.h5").string();
}

}  // namespace sb::reference
