#include "cli/runtime_info.h"

#include <H5public.h>

#include <sstream>

#include "comm/string_collectives.h"
#include "core/cuda_work_queues.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "data/cuda/nvjpeg_decoder.h"
#include "train/engines/cuda/device_info.h"
#endif

namespace sb {

RuntimeInfo gather_runtime_info(MpiSession& session, bool use_gpu) {
  RuntimeInfo info;
  info.scalebench_version = SCALEBENCH_VERSION;
  info.mpi_version = mpi_library_version();
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  info.hdf5_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  std::string my_device = "cpu";
  int gpus = 0;
#ifdef SCALEBENCH_HAVE_CUDA
  info.cuda_built = true;
  const CudaVersions v = cuda_versions();
  info.cuda_runtime_version = v.runtime;
  info.cuda_driver_version = v.driver;
  info.cudnn_version = v.cudnn;
  info.nccl_version = v.nccl;
  gpus = visible_gpu_count();
  if (use_gpu && gpus > 0) my_device = gpu_name(session.local_rank() % gpus);
#else
  (void)use_gpu;
#endif
  info.gpu_count_min = session.world().allreduce_min(gpus);
  info.rank_devices = allgather_strings(session.world(), my_device);
  return info;
}

std::string image_decoder_list() {
  std::string nvjpeg = "not built in";
#ifdef SCALEBENCH_HAVE_CUDA
  if (nvjpeg_built_in()) nvjpeg = visible_gpu_count() > 0 ? nvjpeg_device_backend() : "built in";
#endif
  return "libjpeg-turbo, libpng, nvjpeg (" + nvjpeg + ")";
}

std::string format_runtime_info(const RuntimeInfo& info, const MpiSession& session) {
  std::ostringstream out;
  out << "scalebench " << info.scalebench_version << "\n"
      << "  MPI     " << info.mpi_version << "\n"
      << "  HDF5    " << info.hdf5_version << "\n"
      << "  CUDA    " << (info.cuda_built ? "backend built" : "backend not built") << "; runtime " << info.cuda_runtime_version
      << ", driver " << info.cuda_driver_version << ", cuDNN " << info.cudnn_version << ", NCCL " << info.nccl_version;
  if (info.cuda_built) out << "; work queues " << cuda_work_queues() << " (" << kCudaWorkQueuesVariable << ")";
  out << "\n";
  if (!info.image_decoders.empty()) out << "  decoders " << info.image_decoders << "\n";
  out << "  launcher " << session.launcher().name;
  if (!session.launcher().job_id.empty()) out << " (job " << session.launcher().job_id << ")";
  out << "\n  ranks   " << session.size() << " on " << session.node_count() << " node(s)\n";
  for (int r = 0; r < session.size(); ++r) {
    out << "    rank " << r << "  " << session.hosts()[static_cast<size_t>(r)] << "  " << info.rank_devices[static_cast<size_t>(r)] << "\n";
  }
  return out.str();
}

}  // namespace sb
