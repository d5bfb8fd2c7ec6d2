// ImageNet-style augmentation maths shared by the CPU resampler (src/data/image/resample.h) and the CUDA kernel
// (kernels/resized_crop.h): torchvision's RandomResizedCrop box draw, the box of Resize + CenterCrop, and
// the antialiased bilinear resampling of a box to the output size as PIL / torchvision (antialias=True)
// define it. Host and device code include this header, so both compute literally the same arithmetic.
//
// Philox mapping of draw_random_resized_crop (one 4x32 block per attempt, one for the flip):
//   key        = seed
//   counter_hi = (uint64(epoch) << 32) | uint32(rank)            (as src/maths/augment.h)
//   counter_lo = position * 16 + b, b = 0..9 the attempts, b = 10 the flip; position < 2^60 (the
//                sample's place in this rank's index list for the epoch, as in augment.h)
//   attempt b, v = philox4x32(counter_hi, position * 16 + b, seed):
//     u(k)   = double(v[k]) / 2^32                               in [0, 1)
//     area_t = W*H * (scale_min + u(0) * (scale_max - scale_min))
//     ratio  = exp(log(ratio_min) + u(1) * (log(ratio_max) - log(ratio_min)))
//     w = rint(sqrt(area_t * ratio)), h = rint(sqrt(area_t / ratio))   (round half to even, as Python)
//     accepted iff 0 < w <= W and 0 < h <= H: top = v[2] % (H - h + 1), left = v[3] % (W - w + 1)
//   no attempt accepted: torchvision's central fallback (the whole image clamped to the ratio range)
//   flip = (philox4x32(counter_hi, position * 16 + 10, seed).v[0] >> 31) != 0      p = 0.5
// All in double; exp/log/sqrt are the platform's (CUDA's exp and log may differ from glibc's in the last
// bit, so a box drawn on a device can rarely differ by a pixel: draw boxes on the host).
//
// Resampling a box (x, y, width, height in source pixels, fractional allowed) to out_w x out_h, per axis
// (in float, and without contraction into FMAs in device code, so both sides round alike):
//   scale   = box_size / out_size,  support = max(scale, 1)  (the triangle's half width in source pixels)
//   centre  = box_start + (o + 0.5) * scale                  for output index o
//   taps    = i in [floor(centre - support + 0.5), floor(centre + support + 0.5)) clipped to [0, in_size)
//   raw(i)  = max(0, 1 - |((i - centre) + 0.5) / support|)   (the division as a product with 1/support)
//   weight  = raw(i) * (1 / sum of raw over the taps)        (a box wholly outside the image: nearest edge)
// Output value (per channel, p the uint8 pixels, sums in tap order starting from 0):
//   row(j) = sum_i wx(i) * p(j, i);  acc = sum_j wy(j) * row(j);  value = clamp(trunc(acc + 0.5), 0, 255)
// (round half up; no rounding between the two axes). The flip mirrors the output columns:
// out(y, x) = value(y, out_w - 1 - x).
#pragma once
#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "core/philox.h"

namespace sb {

// A region of the source image in pixel coordinates (top-left corner and size, may be fractional) and
// whether the output is mirrored. (Named apart from data/image/decoded_image.h's integer CropBox, the
// region a decode keeps, which callers use beside it.)
struct ResizedCropBox {
  float x = 0, y = 0, width = 0, height = 0;
  bool flip = false;
};

struct RandomResizedCropParams {
  float scale_min = 0.08f, scale_max = 1.0f;
  float ratio_min = 3.0f / 4, ratio_max = 4.0f / 3;
};

// The attempts of torchvision's get_params before its fallback.
constexpr int kRandomResizedCropAttempts = 10;

SB_HOST_DEVICE double philox_unit_double(uint32_t word) { return static_cast<double>(word) * (1.0 / 4294967296.0); }

// torchvision's fallback: the whole image, cut to the nearest allowed aspect ratio, centred.
SB_HOST_DEVICE ResizedCropBox central_fallback_box(int width, int height, RandomResizedCropParams p) {
  const double in_ratio = static_cast<double>(width) / height;
  const double ratio_lo = p.ratio_min < p.ratio_max ? p.ratio_min : p.ratio_max;
  const double ratio_hi = p.ratio_min < p.ratio_max ? p.ratio_max : p.ratio_min;
  int w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = static_cast<int>(rint(w / ratio_lo));
  } else if (in_ratio > ratio_hi) {
    w = static_cast<int>(rint(h * ratio_hi));
  }
  ResizedCropBox box;
  box.x = static_cast<float>((width - w) / 2);
  box.y = static_cast<float>((height - h) / 2);
  box.width = static_cast<float>(w);
  box.height = static_cast<float>(h);
  return box;
}

SB_HOST_DEVICE ResizedCropBox draw_random_resized_crop(uint64_t seed, int64_t epoch, int rank, uint64_t position,
                                                       int width, int height, RandomResizedCropParams p) {
  const uint64_t counter_hi = (static_cast<uint64_t>(epoch) << 32) | static_cast<uint32_t>(rank);
  const uint64_t first_block = position * 16u;
  const double area = static_cast<double>(width) * height;
  const double log_lo = log(static_cast<double>(p.ratio_min)), log_hi = log(static_cast<double>(p.ratio_max));
  ResizedCropBox box;
  bool accepted = false;
  for (int attempt = 0; attempt < kRandomResizedCropAttempts && !accepted; ++attempt) {
    const Philox4 v = philox4x32(counter_hi, first_block + static_cast<uint64_t>(attempt), seed);
    const double target_area =
        area * (p.scale_min + philox_unit_double(v.v[0]) * (static_cast<double>(p.scale_max) - p.scale_min));
    const double ratio = exp(log_lo + philox_unit_double(v.v[1]) * (log_hi - log_lo));
    const double w = rint(sqrt(target_area * ratio)), h = rint(sqrt(target_area / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const uint32_t wi = static_cast<uint32_t>(w), hi = static_cast<uint32_t>(h);
      box.y = static_cast<float>(v.v[2] % (static_cast<uint32_t>(height) - hi + 1u));
      box.x = static_cast<float>(v.v[3] % (static_cast<uint32_t>(width) - wi + 1u));
      box.width = static_cast<float>(wi);
      box.height = static_cast<float>(hi);
      accepted = true;
    }
  }
  if (!accepted) box = central_fallback_box(width, height, p);
  box.flip = (philox4x32(counter_hi, first_block + kRandomResizedCropAttempts, seed).v[0] >> 31) != 0;
  return box;
}

// torchvision's Resize(resize_shorter) then CenterCrop(crop) as one box of the source image: the shorter
// side becomes resize_shorter, the longer int(resize_shorter * long / short); the crop's corner in the
// resized image is int(round((size - crop) / 2.0)) (half to even, as Python). Resampling the box to
// crop x crop gives the same sample centres and filter widths as resizing the whole image and cropping.
// Needs crop <= resize_shorter (torchvision would pad a larger crop; this does not).
SB_HOST_DEVICE ResizedCropBox center_crop_box(int width, int height, int resize_shorter, int crop) {
  int new_width = resize_shorter, new_height = resize_shorter;
  if (width <= height)
    new_height = static_cast<int>(static_cast<int64_t>(resize_shorter) * height / width);
  else
    new_width = static_cast<int>(static_cast<int64_t>(resize_shorter) * width / height);
  const float scale_x = static_cast<float>(width) / new_width, scale_y = static_cast<float>(height) / new_height;
  const int top = static_cast<int>(rint((new_height - crop) / 2.0));
  const int left = static_cast<int>(rint((new_width - crop) / 2.0));
  ResizedCropBox box;
  box.x = left * scale_x;
  box.y = top * scale_y;
  box.width = crop * scale_x;
  box.height = crop * scale_y;
  return box;
}

// ---- the resampling filter, one axis at a time ----

// Device code must not fuse a product into a sum here: the host rounds each separately.
SB_HOST_DEVICE float resample_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SB_HOST_DEVICE float resample_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// One axis of a resampling: the box's extent along it, the output and input sizes.
struct ResampleAxis {
  float start = 0;
  float scale = 1;          // box_size / out_size
  float support = 1;        // max(scale, 1)
  float inv_support = 1;    // 1 / support
  int in_size = 1;
};

SB_HOST_DEVICE ResampleAxis resample_axis(float box_start, float box_size, int out_size, int in_size) {
  ResampleAxis a;
  a.start = box_start;
  a.scale = box_size / static_cast<float>(out_size);
  a.support = a.scale > 1.0f ? a.scale : 1.0f;
  a.inv_support = 1.0f / a.support;
  a.in_size = in_size;
  return a;
}

// The taps of output index o: source indices first .. first + count - 1, their raw weights scaled by inv_sum.
struct AxisTaps {
  int first = 0;
  int count = 1;
  float centre = 0;
  float inv_sum = 1;
};

// The raw (unnormalised) triangle weight of source index i.
SB_HOST_DEVICE float resample_raw_weight(const ResampleAxis& a, float centre, int i) {
  const float t = resample_mul(resample_add(resample_add(static_cast<float>(i), -centre), 0.5f), a.inv_support);
  const float w = 1.0f - (t < 0 ? -t : t);
  return w > 0 ? w : 0.0f;
}

SB_HOST_DEVICE AxisTaps resample_taps(const ResampleAxis& a, int o) {
  AxisTaps t;
  t.centre = resample_add(a.start, resample_mul(static_cast<float>(o) + 0.5f, a.scale));
  int first = static_cast<int>(floorf(resample_add(resample_add(t.centre, -a.support), 0.5f)));
  int end = static_cast<int>(floorf(resample_add(resample_add(t.centre, a.support), 0.5f)));
  if (first < 0) first = 0;
  if (end > a.in_size) end = a.in_size;
  float sum = 0;
  for (int i = first; i < end; ++i) sum = resample_add(sum, resample_raw_weight(a, t.centre, i));
  if (!(sum > 0)) {  // the box lies outside the image along this axis: the nearest edge pixel
    t.first = t.centre < 0 ? 0 : a.in_size - 1;
    t.count = 1;
    t.centre = static_cast<float>(t.first) + 0.5f;
    t.inv_sum = 1;
    return t;
  }
  t.first = first;
  t.count = end - first;
  t.inv_sum = 1.0f / sum;
  return t;
}

// The normalised weight of tap k (source index first + k).
SB_HOST_DEVICE float resample_weight(const ResampleAxis& a, const AxisTaps& t, int k) {
  return resample_mul(resample_raw_weight(a, t.centre, t.first + k), t.inv_sum);
}

// The source indices that the taps of outputs 0 .. out_size - 1 read along an axis: [first, end). The
// centre is monotone in o (every rounding is), so the taps' window only moves right, and an output with
// no tap inside the image (the nearest-edge case) lies beyond every output on its side: the first output's
// first tap and the last output's end bound them all. A region decode keeps just these pixels.
struct SourceSpan {
  int first = 0, end = 0;
};

SB_HOST_DEVICE SourceSpan resample_span(const ResampleAxis& a, int out_size) {
  const AxisTaps lo = resample_taps(a, 0), hi = resample_taps(a, out_size - 1);
  SourceSpan s;
  s.first = lo.first < hi.first ? lo.first : hi.first;
  s.end = lo.first + lo.count > hi.first + hi.count ? lo.first + lo.count : hi.first + hi.count;
  return s;
}

// The integer rectangle of an image of width x height that resampling `box` to out_width x out_height
// reads, widened by `margin` pixels on each side and kept inside the image.
struct SourceRegion {
  int x = 0, y = 0, width = 0, height = 0;
};

SB_HOST_DEVICE SourceRegion resample_source_region(const ResizedCropBox& box, int out_width, int out_height, int width,
                                                   int height, int margin) {
  const SourceSpan xs = resample_span(resample_axis(box.x, box.width, out_width, width), out_width);
  const SourceSpan ys = resample_span(resample_axis(box.y, box.height, out_height, height), out_height);
  SourceRegion r;
  r.x = xs.first - margin > 0 ? xs.first - margin : 0;
  r.y = ys.first - margin > 0 ? ys.first - margin : 0;
  r.width = (xs.end + margin < width ? xs.end + margin : width) - r.x;
  r.height = (ys.end + margin < height ? ys.end + margin : height) - r.y;
  return r;
}

// The 2-D weighted sum as a byte: round half up, clamped to 0..255.
// (Written as clamps, which the CPU resampler's loops vectorise.)
SB_HOST_DEVICE int resampled_byte(float acc) {
  float v = resample_add(acc, 0.5f);
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return static_cast<int>(v);
}

}  // namespace sb
