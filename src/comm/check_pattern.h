// The check data of the `comm` sweep. Rank r holds value(r, i) at input element i: small non-negative
// integers chosen so that the sum over all ranks, and every partial sum on the way, is exact in `dtype`
// (at most 256 in bf16, 2048 in fp16). A reduced element i must then equal expected_sum(i) exactly, in
// any order of reduction; a moved one (all-gather, broadcast) must equal the value it was sent as. No
// value is negative, so a result buffer filled with kUnwritten beforehand shows elements never written.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/sweep_dtype.h"

namespace sb {

class CheckPattern {
 public:
  static constexpr double kUnwritten = -1;  // exact in every dtype, never a value or a sum

  CheckPattern(SweepDtype dtype, int ranks);
  double value(int rank, int64_t i) const {
    const int64_t j = (i + rank) % modulus_;
    return one_hot_ ? (j == 0 ? 1.0 : 0.0) : static_cast<double>(j);
  }
  double expected_sum(int64_t i) const { return expected_[static_cast<size_t>(i % modulus_)]; }

 private:
  int64_t modulus_ = 1;
  bool one_hot_ = false;           // past 256 ranks in bf16: one rank holds 1, the others 0
  std::vector<double> expected_;   // by i % modulus_
};

}  // namespace sb
