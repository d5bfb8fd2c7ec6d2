// The command line of `scalebench predict`: its own small table (the training options do not apply),
// read by the parser and by --help alike.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb::predict {

struct PredictOptions {
  std::string study;        // --study: a `scale` file
  std::string comm;         // --comm: a `comm` file, measured inside a node
  std::string comm_inter;   // --comm-inter: a `comm` file measured across nodes, one rank per node
  std::string network;      // --network: nodes, GPUs per node, the inter-node link
  std::vector<int64_t> gpus;          // empty: powers of two up to 1024
  int64_t batch_size = 0;             // 0: the study's --batch-size
  std::vector<double> bucket_mibs{1, 2, 5, 10, 25, 50, 100};  // searched for the best bucket size
  std::string out, csv, json;
  bool check = false;
  bool help = false;
};

// Throws sb::UserError naming the option and the value, with what it expects.
PredictOptions parse_predict_options(const std::vector<std::string>& args);
std::string predict_help_text();

}  // namespace sb::predict
