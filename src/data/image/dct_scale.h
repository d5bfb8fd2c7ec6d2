// The DCT-domain downscale of a JPEG decode: libjpeg-turbo has SIMD IDCTs for 1/2, 1/4 and 1/8 only
// (other M/8 factors are slower than a full decode), so only those are chosen.
#pragma once

namespace sb {

// libjpeg's output size at scale 1/denominator: ceil(size / denominator).
inline int dct_scaled_size(int size, int denominator) { return (size + denominator - 1) / denominator; }

// The largest denominator of 8, 4, 2 whose output is still at least min_width x min_height, or 1 (full
// size) when none is or when no minimum is asked (both 0).
inline int choose_dct_denominator(int width, int height, int min_width, int min_height) {
  if (min_width <= 0 && min_height <= 0) return 1;
  for (int denominator : {8, 4, 2})
    if (dct_scaled_size(width, denominator) >= min_width && dct_scaled_size(height, denominator) >= min_height)
      return denominator;
  return 1;
}

}  // namespace sb
