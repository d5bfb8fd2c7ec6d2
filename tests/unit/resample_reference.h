// The resampling of src/maths/resized_crop.h computed independently in double, for the tests: the
// same filter (taps, triangle weights, clipping to the image, normalisation), none of the float code.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace sb::testing {

struct ReferenceImage {
  int width = 0, height = 0, channels = 3;
  std::vector<uint8_t> pixels;  // HWC
  uint8_t at(int x, int y, int c) const { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
};

inline ReferenceImage random_image(int width, int height, int channels, std::mt19937_64& rng) {
  ReferenceImage image{width, height, channels, {}};
  image.pixels.resize(static_cast<size_t>(width) * height * channels);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(byte(rng));
  return image;
}

// One output index's taps: first source index and normalised weights.
struct ReferenceTaps {
  int first = 0;
  std::vector<double> weights;
};

inline ReferenceTaps reference_taps(double box_start, double box_size, int out_size, int in_size, int o) {
  const double scale = box_size / out_size, support = std::max(scale, 1.0);
  const double centre = box_start + (o + 0.5) * scale;
  const int first = std::max(0, static_cast<int>(std::floor(centre - support + 0.5)));
  const int end = std::min(in_size, static_cast<int>(std::floor(centre + support + 0.5)));
  ReferenceTaps taps{first, {}};
  double sum = 0;
  for (int i = first; i < end; ++i) {
    taps.weights.push_back(std::max(0.0, 1.0 - std::fabs((i + 0.5 - centre) / support)));
    sum += taps.weights.back();
  }
  for (double& w : taps.weights) w /= sum;
  return taps;
}

// The unrounded values of the box resampled to out_width x out_height (HWC, not mirrored).
inline std::vector<double> reference_resample(const ReferenceImage& image, double x, double y, double width,
                                              double height, int out_width, int out_height) {
  std::vector<double> out(static_cast<size_t>(out_width) * out_height * image.channels);
  for (int oy = 0; oy < out_height; ++oy) {
    const ReferenceTaps ty = reference_taps(y, height, out_height, image.height, oy);
    for (int ox = 0; ox < out_width; ++ox) {
      const ReferenceTaps tx = reference_taps(x, width, out_width, image.width, ox);
      for (int c = 0; c < image.channels; ++c) {
        double sum = 0;
        for (size_t j = 0; j < ty.weights.size(); ++j)
          for (size_t i = 0; i < tx.weights.size(); ++i)
            sum += ty.weights[j] * tx.weights[i] *
                   image.at(tx.first + static_cast<int>(i), ty.first + static_cast<int>(j), c);
        out[(static_cast<size_t>(oy) * out_width + ox) * image.channels + c] = sum;
      }
    }
  }
  return out;
}

// Round half up, clamped, as the resampler stores a value.
inline int reference_byte(double value) { return static_cast<int>(std::clamp(std::floor(value + 0.5), 0.0, 255.0)); }

}  // namespace sb::testing
