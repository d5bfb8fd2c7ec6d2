// What a prediction reads from a `comm` sweep (the /comm table, comm_version 1 or 2): the in-place
// all-reduce times of one dtype and the ranks they were measured on, fitted to the ring model.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "predict/ring_model.h"

namespace sb::predict {

struct CommFit {
  std::string path;
  std::string backend;  // "mpi" or "nccl"
  std::string dtype;    // the rows fitted
  int64_t ranks = 0;
  int64_t sizes = 0;    // rows fitted
  std::vector<TimedSize> samples;  // those rows' times, sorted by size
  RingFit fit;
};

// `option` names the command-line option in messages (--comm, --comm-inter). Fits the rows of `dtype`,
// else of fp32 when the sweep has no such rows (the CPU backend runs no bf16). Throws sb::UserError naming
// the option and the file, with a hint, for a missing file, a file that is not a `comm` sweep, a sweep on
// one rank, or one without two timed sizes.
CommFit read_comm_fit(const std::string& option, const std::string& path, const std::string& dtype);

}  // namespace sb::predict
