// Writes scalebench's initial parameters and buffers for a model, input shape and seed to HDF5, so that
// tests/reference/make_fixtures.py can start PyTorch from exactly these weights:
//
//   dump_initial_weights --model mnist-cnn --input 1x28x28 --classes 10 --seed 1234 --out mnist.h5
//   dump_initial_weights --model wrn --input 3x32x32 --classes 10 --widths 8,16,24,32 --seed 1234 --out wrn.h5
//
// Layout: params/<name> and buffers/<name>, one float32 dataset per tensor named by its ParamSpec name
// (shape as in PyTorch), and root attributes model, input, classes, widths, seed, param_order and
// buffer_order (the flat-buffer order; HDF5 lists a group's members alphabetically).
// --npy-dir DIR also writes DIR/<name>.npy per tensor and DIR/param_order.txt, DIR/buffer_order.txt (one
// name a line), which numpy reads without h5py (make_fixtures.py uses them).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/build_info.h"
#include "nn/cpu/network.h"
#include "reference/fixture_io.h"
#include "reference/reference_case.h"

namespace {

constexpr const char* kUsage =
    "usage: dump_initial_weights --model mnist-cnn|wrn|resnet18|resnet34|resnet50 --input CxHxW --classes N --seed S [--widths A,B,C,D] "
    "--out FILE.h5 [--npy-dir DIR]";

struct Options {
  sb::reference::ReferenceCase c;
  std::string out;
  std::string npy_dir;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::puts(kUsage);
      std::exit(0);
    }
    if (i + 1 >= argc) throw sb::UserError(arg + " needs a value; " + kUsage);
    const std::string value = argv[++i];
    if (arg == "--model") {
      o.c.model = value;
    } else if (arg == "--input") {
      const auto v = sb::reference::parse_ints(value, 'x');
      if (v.size() != 3) throw sb::UserError("--input expects CxHxW, got '" + value + "'");
      o.c.input.channels = v[0], o.c.input.height = v[1], o.c.input.width = v[2];
    } else if (arg == "--classes") {
      o.c.input.classes = sb::reference::parse_ints(value, ',').at(0);
    } else if (arg == "--seed") {
      o.c.seed = std::stoull(value);
    } else if (arg == "--widths") {
      const auto v = sb::reference::parse_ints(value, ',');
      if (v.size() != 4) throw sb::UserError("--widths expects four numbers, got '" + value + "'");
      for (size_t k = 0; k < 4; ++k) o.c.widths[k] = v[k];
    } else if (arg == "--out") {
      o.out = value;
    } else if (arg == "--npy-dir") {
      o.npy_dir = value;
    } else {
      throw sb::UserError("unknown option " + arg + "; " + kUsage);
    }
  }
  if (o.out.empty()) throw sb::UserError(std::string("--out is required; ") + kUsage);
  return o;
}

std::string join(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

void write_group(hid_t file, const char* name, const std::vector<sb::ParamSpec>& specs, const std::vector<float>& flat) {
  sb::h5::Handle group = sb::reference::create_group(file, name);
  for (const sb::ParamSpec& s : specs)
    sb::reference::write_floats(group.get(), s.name, flat.data() + s.offset, s.shape.dims);
}

// One tensor in numpy's .npy format (version 1.0, little-endian float32, C order).
void write_npy(const std::filesystem::path& path, const float* data, const std::vector<int64_t>& shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t n = 1;
  for (int64_t d : shape) {
    header += std::to_string(d) + ",";
    n *= d;
  }
  header += "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64 bytes.
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  const uint16_t length = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(length & 0xFF)).put(static_cast<char>(length >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(float)));
  if (!f) throw sb::UserError("cannot write " + path.string());
}

void write_npy_dir(const std::filesystem::path& dir, const std::vector<sb::ParamSpec>& specs, const std::vector<float>& flat,
                   const char* order_file) {
  std::ofstream order(dir / order_file);
  for (const sb::ParamSpec& s : specs) {
    write_npy(dir / (s.name + ".npy"), flat.data() + s.offset, s.shape.dims);
    order << s.name << "\n";
  }
  if (!order) throw sb::UserError("cannot write " + (dir / order_file).string());
}

std::vector<std::string> names(const std::vector<sb::ParamSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.name);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const sb::LayerSpec spec = sb::reference::build_case(o.c, /*dropout=*/true);
    // The CPU network initialises exactly as training does (sb::initialize_flat from the seed).
    sb::cpu::Network<float> net(spec, o.c.seed);

    sb::h5::init_hdf5();
    sb::h5::Handle file = sb::h5::Handle::file(CHECK_HDF5(H5Fcreate(o.out.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
    const hid_t root = file.get();
    const auto& in = o.c.input;
    sb::h5::write_string_attribute(root, "model", o.c.model);
    sb::h5::write_string_attribute(root, "input", join({in.channels, in.height, in.width}, "x"));
    sb::h5::write_int_attribute(root, "classes", in.classes);
    sb::h5::write_string_attribute(root, "widths", join({o.c.widths.begin(), o.c.widths.end()}, ","));
    sb::h5::write_int_attribute(root, "seed", static_cast<int64_t>(o.c.seed));
    sb::h5::write_int_attribute(root, "param_count", static_cast<int64_t>(net.params().size()));
    sb::h5::write_string_attribute(root, "scalebench_git_sha", sb::build_git_sha());
    sb::h5::write_string_list_attribute(root, "param_order", names(net.param_specs()));
    sb::h5::write_string_list_attribute(root, "buffer_order", names(net.buffer_specs()));
    write_group(root, "params", net.param_specs(), net.params());
    write_group(root, "buffers", net.buffer_specs(), net.buffers());
    if (!o.npy_dir.empty()) {
      std::filesystem::create_directories(o.npy_dir);
      write_npy_dir(o.npy_dir, net.param_specs(), net.params(), "param_order.txt");
      write_npy_dir(o.npy_dir, net.buffer_specs(), net.buffers(), "buffer_order.txt");
    }
    std::printf("wrote %s: %s, %zu parameters in %zu tensors, %zu buffer tensors\n", o.out.c_str(), o.c.model.c_str(),
                net.params().size(), net.param_specs().size(), net.buffer_specs().size());
    return 0;
  } catch (const std::exception& e) {  // UserError, or a number that does not parse
    std::fprintf(stderr, "dump_initial_weights: %s\n", e.what());
    return 2;
  }
}
