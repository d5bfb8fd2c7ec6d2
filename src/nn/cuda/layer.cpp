#include "nn/cuda/layer.h"

namespace sb::cuda {

ParamViews ParamViews::advanced(int64_t params_count, int64_t buffers_count) const {
  ParamViews v = *this;
  if (v.params) v.params += params_count;
  if (v.grads) v.grads += params_count;
  if (v.compute_params)
    v.compute_params = static_cast<char*>(v.compute_params) + params_count * static_cast<int64_t>(dtype_size(compute));
  if (v.buffers) v.buffers += buffers_count;
  return v;
}

}  // namespace sb::cuda
