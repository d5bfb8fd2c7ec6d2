#include "train/engines/host_allreduce_sync.h"

#include "core/error.h"

namespace sb {
namespace {

class HostAllreduceSync final : public GradientSync {
 public:
  HostAllreduceSync(Communicator& comm, std::span<float> grads) : comm_(comm), grads_(grads) {}

  void begin(int, size_t) override {}
  void gradients_ready(int64_t, StreamHandle) override {}
  // Every rank all-reduces, one rank too (the average of one is its own gradient, bit for bit).
  void finish() override { comm_.allreduce_avg(grads_); }
  bool averages() const override { return comm_.size() > 1; }

 private:
  Communicator& comm_;
  std::span<float> grads_;
};

std::unique_ptr<GradientSync> make_host_allreduce(const GradientSyncSetup& setup) {
  if (setup.device) fatal("the host all-reduce averages host memory; a device engine needs a device strategy");
  return std::make_unique<HostAllreduceSync>(setup.comm, setup.grads);
}

}  // namespace

const GradientSyncStrategy kHostAllreduce{
    "allreduce", "the whole gradient averaged by one blocking MPI all-reduce after the last backward", Device::Cpu,
    make_host_allreduce};

}  // namespace sb
