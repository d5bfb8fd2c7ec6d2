// The default of --workers: the cores the launcher gives each rank, at least one.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "data/worker_count.h"

namespace sb {
namespace {

EnvLookup env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(InputWorkers, SlurmsCpusPerTaskWins) {
  EXPECT_EQ(default_input_workers(4, 64, 64, env_of({{"SLURM_CPUS_PER_TASK", "7"}})), 7);
  EXPECT_EQ(default_input_workers(4, 64, 64, env_of({{"SLURM_CPUS_PER_TASK", "x"}})), 16) << "an unreadable value is ignored";
}

TEST(InputWorkers, ABoundRankKeepsItsCoresAnUnboundOneShares) {
  EXPECT_EQ(default_input_workers(4, 8, 64, env_of({})), 8) << "bound to 8 of 64 cores";
  EXPECT_EQ(default_input_workers(4, 64, 64, env_of({})), 16) << "every core visible, 4 ranks on the node";
  EXPECT_EQ(default_input_workers(8, 4, 4, env_of({})), 1) << "at least one";
  EXPECT_EQ(default_input_workers(0, 4, 4, env_of({})), 4);
}

TEST(InputWorkers, ThisProcessGetsAtLeastOne) { EXPECT_GE(default_input_workers(1), 1); }

}  // namespace
}  // namespace sb
