#include <H5public.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/runtime_info.h"
#include "comm/string_collectives.h"
#include "core/error.h"

namespace sb {

int info_command(MpiSession& session, const std::vector<std::string>& args) {
  const CliConfig cli = parse_options("info", kInfo | kComm, args);
  if (cli.help) {
    if (session.rank() == 0) std::fputs(help_text("info", kInfo, "Prints versions, ranks, hosts and devices.").c_str(), stdout);
    return 0;
  }
  const RuntimeInfo info = gather_runtime_info(session);
  if (session.rank() == 0) std::fputs(format_runtime_info(info, session).c_str(), stdout);
  if (cli.train.device == "cuda" && info.gpu_count_min == 0) {
    throw UserError(info.cuda_built ? "--device cuda: no CUDA device is visible on at least one rank"
                                    : "--device cuda: this build has no CUDA backend (configure with -DSCALEBENCH_CUDA=ON)");
  }
  return 0;
}

}  // namespace sb
