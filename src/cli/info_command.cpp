#include <H5public.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/runtime_info.h"
#include "comm/string_collectives.h"
#include "core/error.h"
#include "train/collective.h"

namespace sb {

int info_command(MpiSession& session, const std::vector<std::string>& args) {
  CliConfig cli;  // checks that can fail run collectively: one sentence, every rank stops (train_command.cpp)
  run_collectively(session.world(), [&] { cli = parse_options("info", kInfo | kComm, args); });
  if (cli.help) {
    if (session.rank() == 0) std::fputs(help_text("info", kInfo, "Prints versions, ranks, hosts and devices.").c_str(), stdout);
    return 0;
  }
  const RuntimeInfo info = gather_runtime_info(session);
  if (session.rank() == 0) std::fputs(format_runtime_info(info, session).c_str(), stdout);
  if (cli.train.device == Device::Cuda && info.gpu_count_min == 0) {
    // gpu_count_min is reduced over the job: every rank throws together.
    throw AgreedError(info.cuda_built ? "--device cuda: no CUDA device is visible on at least one rank"
                                    : "--device cuda: this build has no CUDA backend (configure with -DSCALEBENCH_CUDA=ON)",
                      session.size(), session.rank() == 0);
  }
  return 0;
}

}  // namespace sb
