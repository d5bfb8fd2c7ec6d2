#include "cli/run_metadata.h"

#include "core/build_info.h"

namespace sb {

RunMetadata make_run_metadata(const MpiSession& session, const RuntimeInfo& info, const TrainConfig& config,
                              int64_t world_size) {
  RunMetadata m;
  m.git_sha = build_git_sha();
  m.command_line = config.command_line;
  m.config_json = config.to_json();
  m.world_size = world_size;
  m.node_count = session.node_count();
  m.hosts = session.hosts();
  m.gpu_models = info.rank_devices;
  m.hosts.resize(static_cast<size_t>(world_size));
  m.gpu_models.resize(static_cast<size_t>(world_size));
  m.cuda_version = info.cuda_runtime_version;
  m.cudnn_version = info.cudnn_version;
  m.nccl_version = info.nccl_version;
  m.mpi_version = info.mpi_version;
  m.slurm_job_id = session.launcher().job_id;
  m.launcher = session.launcher().name;
  m.node_list = session.launcher().node_list;
  m.ranks_per_node = session.launcher().ranks_per_node;
  return m;
}

}  // namespace sb
