#include <H5public.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/runtime_info.h"
#include "comm/string_collectives.h"
#include "core/error.h"
#include "core/json_text.h"
#include "models/registry.h"
#include "train/collective.h"

namespace sb {
namespace {

// One JSON object per model of the registry, in its order.
std::string model_lines() {
  std::string text;
  for (const ModelInfo& m : model_catalog()) {
    const ModelInput& in = m.home_input;
    const int64_t parameters = count_elements(collect_params(build_model(m.name, in)));
    text += "{\"name\":" + json_quote(m.name) + ",\"description\":" + json_quote(m.description) + ",\"input\":[" +
            std::to_string(in.channels) + "," + std::to_string(in.height) + "," + std::to_string(in.width) +
            "],\"classes\":" + std::to_string(in.classes) + ",\"parameters\":" + std::to_string(parameters) +
            ",\"outputs_log_probabilities\":" + (m.outputs_log_probabilities ? "true" : "false") + "}\n";
  }
  return text;
}

}  // namespace

int info_command(MpiSession& session, const std::vector<std::string>& args) {
  CliConfig cli;  // checks that can fail run collectively: one sentence, every rank stops (train_command.cpp)
  run_collectively(session.world(), [&] { cli = parse_options("info", kInfo | kComm, args); });
  if (cli.help) {
    if (session.rank() == 0) std::fputs(help_text("info", kInfo, "Prints versions, ranks, hosts and devices; with --models, the models instead.").c_str(), stdout);
    return 0;
  }
  if (cli.list_models) {
    if (session.rank() == 0) std::fputs(model_lines().c_str(), stdout);
    return 0;
  }
  RuntimeInfo info = gather_runtime_info(session);
  if (session.rank() == 0) {
    info.image_decoders = image_decoder_list();
    std::fputs(format_runtime_info(info, session).c_str(), stdout);
  }
  if (cli.train.device == Device::Cuda && info.gpu_count_min == 0) {
    // gpu_count_min is reduced over the job: every rank throws together.
    throw AgreedError(info.cuda_built ? "--device cuda: no CUDA device is visible on at least one rank"
                                    : "--device cuda: this build has no CUDA backend (configure with -DSCALEBENCH_CUDA=ON)",
                      session.size(), session.rank() == 0);
  }
  return 0;
}

}  // namespace sb
