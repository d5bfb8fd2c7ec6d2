#include "nn/cpu/loss.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sb::cpu {
namespace {

struct Batch {
  int64_t rows, classes;
};

// Checks the [N, C] scores and every label; a bad label is a bug upstream (data or model), not user input.
template <typename T>
Batch check_batch(const char* what, const Tensor<T>& scores, const int32_t* labels) {
  const Shape& s = scores.shape();
  if (s.rank() != 2 || s[0] < 1 || s[1] < 1) fatal(std::string(what) + " needs N x C scores with N, C >= 1, got " + s.str());
  const Batch b{s[0], s[1]};
  for (int64_t n = 0; n < b.rows; ++n) {
    if (labels[n] < 0 || labels[n] >= b.classes)
      fatal(std::string(what) + ": label " + std::to_string(labels[n]) + " of row " + std::to_string(n) +
            " is outside the " + std::to_string(b.classes) + " classes [0, " + std::to_string(b.classes) + ")");
  }
  return b;
}

}  // namespace

template <typename T>
T nll_loss(const Tensor<T>& logp, const int32_t* labels, Tensor<T>& grad) {
  const Batch b = check_batch("nll_loss", logp, labels);
  grad.resize(logp.shape());
  grad.fill(T(0));
  const T inv_rows = T(1) / static_cast<T>(b.rows);
  double total = 0;  // summed in double: a float sum over a large batch loses digits
  for (int64_t n = 0; n < b.rows; ++n) {
    const int64_t at = n * b.classes + labels[n];
    total -= static_cast<double>(logp[at]);
    grad[at] = -inv_rows;
  }
  return static_cast<T>(total / static_cast<double>(b.rows));
}

// Per row: loss = logsumexp(x) - x[label], dL/dx = (softmax(x) - onehot(label)) / N, with the row max
// subtracted before exp so that large logits cannot overflow.
template <typename T>
T cross_entropy_loss(const Tensor<T>& logits, const int32_t* labels, Tensor<T>& grad) {
  const Batch b = check_batch("cross_entropy_loss", logits, labels);
  grad.resize(logits.shape());
  const T inv_rows = T(1) / static_cast<T>(b.rows);
  double total = 0;
  for (int64_t n = 0; n < b.rows; ++n) {
    const T* x = logits.data() + n * b.classes;
    T* g = grad.data() + n * b.classes;
    const T max = *std::max_element(x, x + b.classes);
    T sum = 0;
    for (int64_t c = 0; c < b.classes; ++c) {
      g[c] = std::exp(x[c] - max);
      sum += g[c];
    }
    const T log_sum = std::log(sum);
    total += static_cast<double>(max + log_sum - x[labels[n]]);
    const T scale = inv_rows / sum;
    for (int64_t c = 0; c < b.classes; ++c) g[c] *= scale;
    g[labels[n]] -= inv_rows;
  }
  return static_cast<T>(total / static_cast<double>(b.rows));
}

template <typename T>
int64_t count_correct(const Tensor<T>& scores, const int32_t* labels) {
  const Batch b = check_batch("count_correct", scores, labels);
  int64_t correct = 0;
  for (int64_t n = 0; n < b.rows; ++n) {
    const T* row = scores.data() + n * b.classes;
    const int64_t best = std::max_element(row, row + b.classes) - row;  // the first maximum
    if (best == labels[n]) ++correct;
  }
  return correct;
}

template float nll_loss<float>(const Tensor<float>&, const int32_t*, Tensor<float>&);
template double nll_loss<double>(const Tensor<double>&, const int32_t*, Tensor<double>&);
template float cross_entropy_loss<float>(const Tensor<float>&, const int32_t*, Tensor<float>&);
template double cross_entropy_loss<double>(const Tensor<double>&, const int32_t*, Tensor<double>&);
template int64_t count_correct<float>(const Tensor<float>&, const int32_t*);
template int64_t count_correct<double>(const Tensor<double>&, const int32_t*);

}  // namespace sb::cpu
