// Writes the seed corpora of the image fuzz targets: small valid JPEGs (baseline, progressive, grey,
// CMYK) each behind the mode bytes of fuzz_jpeg_decode, PNGs of each colour type, and tar shards written
// by sb::TarWriter (samples, a long name) behind the mode bytes of fuzz_tar_reader.
//   make_image_seeds OUT_DIR  ->  OUT_DIR/fuzz_jpeg_decode/*, OUT_DIR/fuzz_png_decode/*, OUT_DIR/fuzz_tar_reader/*
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/image/tar_writer.h"
#include "image_test_files.h"

namespace fs = std::filesystem;
using sb::test::Bytes;

namespace {

void write(const fs::path& path, const Bytes& prefix, const Bytes& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "make_image_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::vector<std::pair<std::string, Bytes>> jpegs() {
  using sb::test::JpegSpec;
  std::vector<std::pair<std::string, Bytes>> out;
  JpegSpec spec;
  spec.width = 24;
  spec.height = 17;
  out.emplace_back("baseline", sb::test::encode_jpeg(spec, sb::test::gradient_rgb(24, 17)));
  spec.progressive = true;
  out.emplace_back("progressive", sb::test::encode_jpeg(spec, sb::test::gradient_rgb(24, 17)));
  JpegSpec grey;
  grey.width = 16;
  grey.height = 16;
  grey.components = 1;
  grey.in_space = JCS_GRAYSCALE;
  out.emplace_back("grey", sb::test::encode_jpeg(grey, Bytes(256, 90)));
  JpegSpec cmyk = grey;
  cmyk.components = 4;
  cmyk.in_space = JCS_CMYK;
  cmyk.file_space = JCS_YCCK;
  out.emplace_back("ycck", sb::test::encode_jpeg(cmyk, Bytes(16 * 16 * 4, 200)));
  return out;
}

std::vector<std::pair<std::string, Bytes>> pngs() {
  using sb::test::PngSpec;
  std::vector<std::pair<std::string, Bytes>> out;
  out.emplace_back("rgb", sb::test::encode_png(PngSpec{8, 6, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, sb::test::gradient_rgb(8, 6)));
  out.emplace_back("rgb_interlaced",
                   sb::test::encode_png(PngSpec{8, 6, PNG_COLOR_TYPE_RGB, 8, true, {}, {}}, sb::test::gradient_rgb(8, 6)));
  out.emplace_back("rgba", sb::test::encode_png(PngSpec{4, 4, PNG_COLOR_TYPE_RGBA, 8, false, {}, {}}, Bytes(64, 77)));
  out.emplace_back("grey_alpha", sb::test::encode_png(PngSpec{4, 4, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false, {}, {}}, Bytes(32, 9)));
  out.emplace_back("grey1", sb::test::encode_png(PngSpec{8, 2, PNG_COLOR_TYPE_GRAY, 1, false, {}, {}}, Bytes{0xF0, 0x0F}));
  out.emplace_back("palette", sb::test::encode_png(PngSpec{4, 1, PNG_COLOR_TYPE_PALETTE, 8, false,
                                                           {{255, 0, 0}, {0, 255, 0}}, {0}},
                                                   Bytes{0, 1, 1, 0}));
  out.emplace_back("sixteen_bit", sb::test::png_header_only(4, 4, 16));
  return out;
}

void tar(const fs::path& path, const std::vector<std::pair<std::string, Bytes>>& members) {
  fs::remove(path);
  sb::TarWriter writer(path.string());
  for (const auto& [name, data] : members) writer.add(name, data);
  writer.finish();
}

Bytes read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_image_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path dir(argv[1]);
  const std::vector<std::pair<std::string, Bytes>> jpeg_files = jpegs();
  for (const auto& [name, bytes] : jpeg_files)
    for (uint8_t mode : {0, 3, 4, 6}) write(dir / "fuzz_jpeg_decode" / (name + "_mode" + std::to_string(mode)), {mode}, bytes);
  for (const auto& [name, bytes] : pngs()) write(dir / "fuzz_png_decode" / name, {}, bytes);

  const fs::path scratch = dir / "tar_scratch.tar";
  const Bytes label = {'1'};
  tar(scratch, {{"000.jpg", jpeg_files[0].second}, {"000.cls", label}, {"001.png", Bytes(40, 3)}, {"001.cls", Bytes{'0'}}});
  const Bytes samples = read(scratch);
  tar(scratch, {{std::string(120, 'd') + "/long.jpg", Bytes(10, 1)}, {std::string(120, 'd') + "/long.cls", label}});
  const Bytes long_names = read(scratch);
  fs::remove(scratch);
  for (uint8_t mode = 0; mode < 4; ++mode) {
    write(dir / "fuzz_tar_reader" / ("samples_mode" + std::to_string(mode)), {mode}, samples);
    write(dir / "fuzz_tar_reader" / ("long_names_mode" + std::to_string(mode)), {mode}, long_names);
  }
  return 0;
}
