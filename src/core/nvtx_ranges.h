// NVTX ranges, so that Nsight Systems shows scalebench's epochs, steps and phases beside the CUDA, NCCL
// and MPI activity (docs/clusters.md has the nsys recipe). All ranges live in the "scalebench" domain.
// Range names: "untimed-init", "epoch N" and "evaluation" (the trainer), "step" with the step's phases inside it, named
// by the phase list (metrics/step_phases.h: data, forward, backward, comm, optimizer), and on the CUDA
// backend "allreduce bucket B" for each gradient bucket's NCCL all-reduce.
//
// Built with the nvtx3 headers (SCALEBENCH_HAVE_NVTX, cmake/Nvtx.cmake) a range costs two calls that do
// nothing until a tool is attached; without them it compiles to nothing.
#pragma once
#include <string>

#ifdef SCALEBENCH_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace sb {

inline constexpr const char* kNvtxDomain = "scalebench";
inline constexpr const char* kNvtxStep = "step";
inline constexpr const char* kNvtxEvaluation = "evaluation";
inline constexpr const char* kNvtxWarmUp = "untimed-init";  // --untimed-init: the untimed steps before the first epoch (train/loop/warm_up.h)
inline std::string nvtx_epoch_name(int epoch) { return "epoch " + std::to_string(epoch + 1); }  // 1-based, as printed
inline std::string nvtx_bucket_name(int bucket) { return "allreduce bucket " + std::to_string(bucket); }

#ifdef SCALEBENCH_HAVE_NVTX
inline nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA(kNvtxDomain);
  return domain;
}
#endif

// Pushes a range on this thread for the object's lifetime.
class NvtxRange {
 public:
  explicit NvtxRange([[maybe_unused]] const char* name) {
#ifdef SCALEBENCH_HAVE_NVTX
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(nvtx_domain(), &attributes);
#endif
  }
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange() {
#ifdef SCALEBENCH_HAVE_NVTX
    nvtxDomainRangePop(nvtx_domain());
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace sb
