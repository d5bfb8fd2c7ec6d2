// The random crop and horizontal flip of CIFAR training, as torchvision's
// RandomCrop(32, padding=4) + RandomHorizontalFlip() + ToTensor() + Normalize(mean, std) do them.
// Host and device code share this header: the CUDA augment kernel must draw exactly these numbers.
//
// Philox mapping (one 4x32 block per sample):
//   key        = seed
//   counter_hi = (uint64(epoch) << 32) | uint32(rank)
//   counter_lo = position, the sample's place in this rank's index list for the epoch (0, 1, ...;
//                batch b, row j of batch size B is position b*B + j)
//   b  = philox4x32(counter_hi, counter_lo, key)
//   dy = int(b.v[0] % (2*pad + 1)) - pad      vertical shift in [-pad, pad]   (pad = 0: no crop)
//   dx = int(b.v[1] % (2*pad + 1)) - pad      horizontal shift in [-pad, pad]
//   flip = (b.v[2] >> 31) != 0                 p = 0.5
// (torchvision's crop corner (top, left) in the padded image is (dy + pad, dx + pad).)
//
// Output pixel (c, y, x) of an H x W image, crop first and flip second as torchvision does:
//   xs = flip ? W-1-x : x
//   raw = image(c, y + dy, xs + dx) inside the image, else 0 (zero padding in raw pixel space, as
//         RandomCrop pads the uint8 image before ToTensor/Normalize)
//   out = (float(raw) / 255 - mean[c]) / std[c]   (computed in float)
// So padded pixels come out as -mean[c]/std[c], exactly as in the PyTorch pipeline.
#pragma once
#include <cstdint>

#include "core/host_device.h"
#include "core/philox.h"

namespace sb {

struct AugmentKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int rank = 0;
};

struct CropFlip {
  int dy = 0;  // shift of the crop window, in [-pad, pad]
  int dx = 0;
  bool flip = false;
};

SB_HOST_DEVICE CropFlip draw_crop_flip(uint64_t seed, int64_t epoch, int rank, uint64_t position, int pad) {
  const uint64_t counter_hi = (static_cast<uint64_t>(epoch) << 32) | static_cast<uint32_t>(rank);
  const Philox4 b = philox4x32(counter_hi, position, seed);
  const uint32_t choices = 2u * static_cast<uint32_t>(pad) + 1u;
  CropFlip t;
  t.dy = static_cast<int>(b.v[0] % choices) - pad;
  t.dx = static_cast<int>(b.v[1] % choices) - pad;
  t.flip = (b.v[2] >> 31) != 0;
  return t;
}

// The raw value (0..255) of output pixel (c, y, x) of an image of C x height x width uint8 pixels.
SB_HOST_DEVICE int crop_flip_pixel(const uint8_t* image, int height, int width, int c, int y, int x, CropFlip t) {
  const int sy = y + t.dy;
  const int sx = (t.flip ? width - 1 - x : x) + t.dx;
  if (sy < 0 || sy >= height || sx < 0 || sx >= width) return 0;
  return image[(static_cast<int64_t>(c) * height + sy) * width + sx];
}

// (raw/255 - mean) / std in T, written out exactly so that the CUDA kernel (float, IEEE division)
// matches the CPU bit for bit.
template <typename T>
SB_HOST_DEVICE T normalize_pixel(int raw, float mean, float std) {
  return (static_cast<T>(raw) / static_cast<T>(255) - static_cast<T>(mean)) / static_cast<T>(std);
}

}  // namespace sb
