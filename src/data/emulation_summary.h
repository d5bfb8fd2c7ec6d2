// One count of `scalebench io --emulate-gpus` over the whole job: the ranks' runs (emulated_training.h)
// summed into the figures its table prints.
#pragma once
#include <string>
#include <vector>

#include "data/emulated_training.h"
#include "data/gpu_emulation.h"

namespace sb {

struct RankEmulation {
  int gpus = 0;  // emulated on the rank
  EmulationRun run;
};

struct CountSummary {
  int gpus_per_node = 0;
  int gpus = 0;               // emulated in the job
  int most_gpus_of_a_rank = 0;
  double utilisation = 0;     // the lowest of the ranks that emulated a GPU: the slowest gates a step
  double images_per_s = 0;    // consumed by all emulated GPUs, over the slowest rank's wall time
  double bytes_per_s = 0;     // read by all ranks, over the same
  double files_per_s = 0;     // samples read by all ranks (a folder: files; tar shards: members)
  double bytes_per_s_per_node = 0, files_per_s_per_node = 0;  // the same over the nodes
  InputTotals totals;         // all ranks' pipelines
  InputStage limit = InputStage::Decode;
};

CountSummary summarize_count(int gpus_per_node, const std::vector<RankEmulation>& ranks, int nodes);

// One node's figures: its ranks' runs summed as a job of one node.
struct NodeSummary {
  std::string host;
  CountSummary count;
};

// A count over the job and over each node: the job's utilisation is the lowest node's (the slowest rank of
// any node gates every step), so a count meets the bar only where it met it on every node.
struct JobSummary {
  CountSummary job;
  std::vector<NodeSummary> nodes;  // in the order of each node's first rank
};

// `hosts[r]` is rank r's host; ranks on one host are one node.
JobSummary summarize_job(int gpus_per_node, const std::vector<RankEmulation>& ranks, const std::vector<std::string>& hosts);

// What the table's limit column says: "compute" where AU met the bar (the emulated GPUs were busy), else
// the input stage that took the most time.
const char* limit_name(const CountSummary& count);

}  // namespace sb
