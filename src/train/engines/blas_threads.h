// Shares the node's cores among the CPU ranks on it: with R ranks on C cores each rank's BLAS gets
// max(1, C / R) threads, so that ranks don't oversubscribe the cores with spinning BLAS threads.
#pragma once
namespace sb {
// Returns the thread count chosen; OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, when set, win.
int share_blas_threads(int ranks_on_node);
}  // namespace sb
