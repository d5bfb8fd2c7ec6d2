#include "data/cuda/input_pipeline.h"

#include <utility>

#include "core/log.h"
#include "core/startup_clock.h"
#include "data/cuda/host_input.h"
#include "data/cuda/resident_input.h"

namespace sb::cuda {

std::unique_ptr<InputPipeline> make_input_pipeline(const Dataset& train, const Dataset& test,
                                                   const InputPipelineOptions& options, WaitForEvent wait) {
  check_fits_batch_kernel(train);
  if (options.from_host || train.streamed()) {
    auto host = std::make_unique<HostInput>(train, test, options, std::move(wait));
    log0("input: %s, %d batch worker(s) per rank, %s buffers\n",
         !train.streamed()                        ? "host memory"
         : options.decode == ImageDecoding::Gpu ? "image files read on the CPU, decoded by nvJPEG"
                                                : "image files decoded on the CPU",
         host->workers(), options.pin_memory ? "pinned" : "pageable");
    return host;
  }
  const StartupSpan upload_startup(StartupPart::upload);
  return std::make_unique<ResidentInput>(train, test, options);
}

}  // namespace sb::cuda
