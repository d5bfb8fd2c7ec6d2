// The options of `scalebench io`, as its parser reads them (io_command.cpp), for the measurement of the
// pipeline alone and for --emulate-gpus (io_emulation.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image_decoding.h"
#include "data/image_data_sets.h"
#include "train/run_choices.h"

namespace sb {

struct IoArgs {
  std::string data;
  std::vector<ImageDecoding> decoders;
  std::vector<int> workers;
  int64_t batch = 256, batches = 40, warm_up = 8, train_limit = 0;
  int image_size = kDefaultImageSize;
  Precision precision = Precision::BF16;
  double target_rate = 0;
  uint64_t seed = 1;
  std::string out;
  bool help = false;
  std::vector<int> emulate_gpus;  // emulated GPUs per node; empty: the pipeline alone
  std::string rate_from;          // a train results file whose rate per GPU the emulated GPUs compute at
  bool cold_cache = false;
};

}  // namespace sb
