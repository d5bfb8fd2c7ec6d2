#include "train/engines/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace sb {

int share_blas_threads(int ranks_on_node) {
  if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return -1;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / std::max(1, ranks_on_node));
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(threads);
#endif
  return threads;
}

}  // namespace sb
