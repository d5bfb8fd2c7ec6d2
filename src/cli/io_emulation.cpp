#include "cli/io_emulation.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "cli/io_rate_from.h"
#include "core/check.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "data/cold_cache.h"
#include "data/emulation_summary.h"
#include "data/image/encoded_images.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "core/cuda_check.h"
#include "data/cuda/emulated_gpu_target.h"
#include "train/engines/cuda/device_info.h"
#endif

namespace sb {
namespace {

// One decoder: --decode gpu was checked against nvJPEG and the GPU with every io run's (io_command.cpp).
void check_emulation_decoder(IoArgs& a) {
  if (a.decoders.empty()) a.decoders.push_back(ImageDecoding::Cpu);
  if (a.decoders.size() > 1)
    throw UserError("--emulate-gpus feeds its emulated GPUs with one decoder: give --decode cpu or --decode gpu, not a list");
}

// --target-rate or --rate-from, one of them.
void check_emulation_rate(IoArgs& a) {
  if (a.target_rate > 0 && !a.rate_from.empty())
    throw UserError("give the emulated GPUs' rate once: --target-rate IMG/S or --rate-from FILE.h5, not both");
  if (a.target_rate <= 0 && a.rate_from.empty())
    throw UserError("--emulate-gpus needs the rate of one GPU: --target-rate IMG/S, or --rate-from FILE.h5 (a train run's "
                    "results)");
  if (!a.rate_from.empty()) a.target_rate = rate_per_gpu_from(a.rate_from);
}

// The counters of one rank's run, flat for a gather.
constexpr size_t kRankFields = 10;
using RankFields = std::array<double, kRankFields>;

RankFields fields_of(const RankEmulation& r) {
  const InputTotals& t = r.run.totals;
  return {static_cast<double>(r.gpus), r.run.compute_s, r.run.wall_s, static_cast<double>(r.run.images), t.read_seconds,
          t.decode_seconds, t.augment_seconds, t.copy_seconds, static_cast<double>(t.bytes), static_cast<double>(t.images)};
}

RankEmulation rank_of(const double* f) {
  RankEmulation r;
  r.gpus = static_cast<int>(f[0]);
  r.run.compute_s = f[1];
  r.run.wall_s = f[2];
  r.run.images = static_cast<int64_t>(f[3]);
  r.run.totals.read_seconds = f[4];
  r.run.totals.decode_seconds = f[5];
  r.run.totals.augment_seconds = f[6];
  r.run.totals.copy_seconds = f[7];
  r.run.totals.bytes = static_cast<int64_t>(f[8]);
  r.run.totals.images = static_cast<int64_t>(f[9]);
  return r;
}

// A barrier that sleeps while it waits: MPI's own spins, and a rank done with its count (or with no emulated
// GPU) would take a core from the ranks still reading and decoding.
void quiet_barrier(const MpiCommunicator& world) {
  MPI_Request request = MPI_REQUEST_NULL;
  CHECK_MPI(MPI_Ibarrier(world.handle(), &request));
  for (int done = 0;;) {
    CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Where the rank's batches go: host memory (--decode cpu), or its GPU, nvJPEG decoding them (--decode gpu).
EmulationRun run_rank(const IoArgs& a, const TrainTest& data, const EmulationSettings& s) {
#ifdef SCALEBENCH_HAVE_CUDA
  if (a.decoders.front() == ImageDecoding::Gpu)
    return run_emulated_training(data.train, s, cuda::gpu_decode_target(data.train, s.format, s.batch, s.rank));
#endif
  (void)a;
  return run_emulated_training(data.train, s);
}

// --decode gpu: the ranks of a node take its GPUs in turn.
void select_rank_gpu(const MpiSession& session, const IoArgs& a) {
#ifdef SCALEBENCH_HAVE_CUDA
  if (a.decoders.front() == ImageDecoding::Gpu) CHECK_CUDA(cudaSetDevice(session.local_rank() % visible_gpu_count()));
#else
  (void)session;
  (void)a;
#endif
}

// Every rank runs its share of one count; rank 0 gets the job's and each node's summary (the others empty ones).
JobSummary measure_count(MpiSession& session, const IoArgs& a, const TrainTest& data, int per_node) {
  EmulationSettings s;
  s.gpus = emulated_gpus_of_rank(per_node, session.local_rank(), session.local_size());
  s.workers = a.workers.front();
  s.batch = a.batch;
  s.warm_up_steps = a.warm_up;
  s.steps = a.batches;
  s.rate = a.target_rate;
  s.format = BatchFormat{compute_dtype(a.precision), Layout::NHWC};
  s.seed = a.seed;
  s.ranks = session.size();
  s.rank = session.rank();
  s.drop_pages = a.cold_cache;
  quiet_barrier(session.world());
  const RankEmulation mine{s.gpus, run_rank(a, data, s)};
  quiet_barrier(session.world());
  const RankFields f = fields_of(mine);
  const std::vector<double> all = session.world().gather(std::span<const double>(f), 0);
  std::vector<RankEmulation> ranks;
  for (size_t at = 0; at < all.size(); at += kRankFields) ranks.push_back(rank_of(all.data() + at));
  return summarize_job(per_node, ranks, session.hosts());
}


// Whether the page cache was defeated on every rank, as the header says it.
std::string page_cache_line(MpiSession& session, const IoArgs& a, const TrainTest& data) {
  if (!a.cold_cache) return "not defeated (--cold-cache not given)";
  const EncodedImages& images = *data.train.encoded;
  const ColdCacheCheck mine = check_cold_cache(images.file_of(session.rank() % images.size()));
  const bool every = session.world().allreduce_min(mine.held ? 1 : 0) == 1;
  if (every || !mine.held) return mine.line;
  return "not defeated on every rank (another rank's file system kept a file's pages after posix_fadvise(DONTNEED))";
}

void print_header(const MpiSession& session, const IoArgs& a, const std::string& page_cache) {
  const std::string source = a.rate_from.empty() ? "--target-rate" : "--rate-from " + a.rate_from + ", its median steady epoch";
  std::printf("io: emulated GPUs computing %.0f img/s each (%s); batches of %lld %dx%d crops in %s, --decode %s, "
              "%d worker(s) a rank, %d rank(s) on %d node(s), %lld timed steps after %lld\n",
              a.target_rate, source.c_str(), static_cast<long long>(a.batch), a.image_size, a.image_size, name_of(a.precision),
              name_of(a.decoders.front()), a.workers.front(), session.size(), session.node_count(), static_cast<long long>(a.batches),
              static_cast<long long>(a.warm_up));
  std::printf("io: page cache: %s\n", page_cache.c_str());
  if (session.node_count() > 1) std::printf("io: AU is the lowest node's; each node's figures follow its count's row\n");
  std::printf("%9s %7s %10s %10s %10s %10s %12s %8s\n", "GPUs/node", "AU", "img/s", "MB/s", "MB/s/node", "files/s",
              "files/s/node", "limit");
}

// The job's row; where the job spans nodes, a line per node under it.
void print_row(const JobSummary& summary) {
  const CountSummary& c = summary.job;
  std::printf("%9d %6.1f%% %10.0f %10.1f %10.1f %10.0f %12.0f %8s\n", c.gpus_per_node, 100 * c.utilisation, c.images_per_s,
              c.bytes_per_s / 1e6, c.bytes_per_s_per_node / 1e6, c.files_per_s, c.files_per_s_per_node, limit_name(c));
  if (summary.nodes.size() > 1)
    for (const NodeSummary& node : summary.nodes)
      std::printf("          node %s: AU %.1f%%, %.0f img/s, %.1f MB/s, %.0f files/s, %s\n", node.host.c_str(),
                  100 * node.count.utilisation, node.count.images_per_s, node.count.bytes_per_s / 1e6, node.count.files_per_s,
                  limit_name(node.count));
  std::fflush(stdout);
}

// The answer: the largest count at the bar, or why none reached it and what would.
// The job's AU is its lowest node's, so the count answered kept the bar on every node.
void print_answer(const IoArgs& a, const std::vector<JobSummary>& counts, int nodes) {
  std::vector<EmulatedCount> au;
  for (const JobSummary& c : counts) au.push_back(EmulatedCount{c.job.gpus_per_node, c.job.utilisation});
  const int largest = largest_count_meeting(au);
  if (largest > 0) {
    std::printf("io: the largest count that keeps AU >= %.0f%%%s: %d emulated GPU(s) per node\n", 100 * kUtilisationBar,
                nodes > 1 ? " on every node" : "", largest);
    return;
  }
  const CountSummary& first = counts.front().job;
  std::printf("io: no count kept AU >= %.0f%%: at %d emulated GPU(s) per node AU was %.1f%% and %s limited", 100 * kUtilisationBar,
              first.gpus_per_node, 100 * first.utilisation, stage_name(first.limit));
  const int workers = workers_needed(first.most_gpus_of_a_rank * a.target_rate, first.totals);
  if (first.limit == InputStage::Copy || workers < 1) {
    std::printf("\n");
  } else if (workers > a.workers.front()) {
    std::printf("; about %d worker(s) a rank would feed its %d GPU(s) at the workers' measured rate\n", workers,
                first.most_gpus_of_a_rank);
  } else {
    // The work fits the workers given: they waited for cores (other processes, or fewer cores than threads).
    std::printf("; %d worker(s) a rank would feed its %d GPU(s) by their busy time alone, so they waited for cores\n",
                workers, first.most_gpus_of_a_rank);
  }
}

void write_csv_row(std::ofstream& csv, const IoArgs& a, const std::string& node, const CountSummary& c,
                   bool page_cache_defeated) {
  csv << name_of(a.decoders.front()) << ',' << a.workers.front() << ',' << node << ',' << c.gpus_per_node << ',' << c.gpus << ','
      << a.target_rate << ',' << c.utilisation << ',' << c.images_per_s << ',' << c.bytes_per_s / 1e6 << ','
      << c.bytes_per_s_per_node / 1e6 << ',' << c.files_per_s << ',' << c.files_per_s_per_node << ',' << limit_name(c) << ','
      << c.totals.read_seconds << ',' << c.totals.decode_seconds << ',' << c.totals.augment_seconds << ','
      << c.totals.copy_seconds << ',' << (page_cache_defeated ? 1 : 0) << '\n';
}

// Per count, the job's row (node "all") and each node's.
void write_emulation_csv(const IoArgs& a, const std::vector<JobSummary>& counts, bool page_cache_defeated) {
  std::ofstream csv(a.out);
  csv << "decode,workers,node,emulated_gpus_per_node,emulated_gpus,rate_per_gpu,accelerator_utilisation,images_per_s,mb_per_s,"
         "mb_per_s_per_node,files_per_s,files_per_s_per_node,limit,read_s,decode_s,augment_s,copy_s,page_cache_defeated\n";
  for (const JobSummary& c : counts) {
    write_csv_row(csv, a, "all", c.job, page_cache_defeated);
    for (const NodeSummary& node : c.nodes) write_csv_row(csv, a, node.host, node.count, page_cache_defeated);
  }
  if (!csv) throw UserError("--out " + a.out + ": writing failed");
}
}  // namespace

void check_emulation_args(IoArgs& a, const MpiSession& session) {
  if (a.emulate_gpus.empty()) {
    if (!a.rate_from.empty()) throw UserError("--rate-from sets the emulated GPUs' rate: add --emulate-gpus LIST");
    if (a.cold_cache) throw UserError("--cold-cache applies to the reads of --emulate-gpus: add --emulate-gpus LIST");
    return;
  }
  check_emulation_decoder(a);
  if (a.workers.size() > 1)
    throw UserError("--emulate-gpus takes one --workers count (the worker threads of each rank), not a list of " +
                    std::to_string(a.workers.size()));
  if (a.workers.empty()) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    a.workers.push_back(std::max(1, cores / std::max(1, session.local_size())));
  }
  check_emulation_rate(a);
}

void check_emulation_data(const IoArgs& a, const TrainTest& data, int ranks) {
  if (data.train.size() / ranks < a.batch)
    throw UserError("--batch-size " + std::to_string(a.batch) + " is more than each of the " + std::to_string(ranks) +
                    " ranks' share of the " + std::to_string(data.train.size()) + " training images of " + a.data +
                    "; lower --batch-size or use fewer ranks");
}

}  // namespace sb

namespace sb {

void run_io_emulation(MpiSession& session, const IoArgs& a, const TrainTest& data) {
  const bool root = session.rank() == 0;
  const std::string page_cache = page_cache_line(session, a, data);
  if (root) print_header(session, a, page_cache);
  select_rank_gpu(session, a);
  std::vector<JobSummary> counts;
  for (int per_node : a.emulate_gpus) {
    counts.push_back(measure_count(session, a, data, per_node));
    if (root) print_row(counts.back());
  }
  if (!root) return;
  print_answer(a, counts, session.node_count());
  if (!a.out.empty()) write_emulation_csv(a, counts, page_cache.rfind("dropped", 0) == 0);
}

}  // namespace sb
