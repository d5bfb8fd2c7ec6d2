// The MPI runner of the `comm` sweep on 1, 2 and 4 ranks: every collective of the table, out of place and
// in place, in fp32 and fp64, passes its check, and its figures follow nccl-tests' definitions; a row
// whose MPI call leaves one wrong element on the last rank is caught, in both forms, naming that rank.
#include <gtest/gtest.h>

#include <string>

#include "comm/allreduce_sweep.h"
#include "comm/collective.h"
#include "comm/mpi_communicator.h"
#include "core/error.h"

namespace sb {
namespace {

const Collective* const kEvery[] = {&kAllReduce, &kReduceScatter, &kAllGather, &kBroadcast};

void expect_figures(const SweepTiming& t, const SweepPoint& point, double factor) {
  EXPECT_GT(t.time_us_min_rank, 0.0);
  EXPECT_LE(t.time_us_min_rank, t.time_us_mean * (1 + 1e-12));
  EXPECT_LE(t.time_us_mean, t.time_us_max_rank * (1 + 1e-12));
  EXPECT_NEAR(t.algbw_gbps, static_cast<double>(point.bytes()) / (t.time_us_mean * 1e-6) / 1e9, 1e-9 * t.algbw_gbps);
  EXPECT_NEAR(t.busbw_gbps, t.algbw_gbps * factor, 1e-9 * t.algbw_gbps);
}

TEST(CpuCollectiveSweep, EveryCollectiveIsExactInBothForms) {
  auto world = MpiCommunicator::world();
  const int n = world->size();
  const SweepSettings settings{3, 1};
  for (const Collective* c : kEvery) {
    for (SweepDtype dtype : {SweepDtype::Fp32, SweepDtype::Fp64}) {
      // One element per rank, an odd count past the check pattern's period, and a larger one.
      for (int64_t asked : {int64_t{n}, int64_t{1003}, int64_t{1} << 16}) {
        const SweepPoint point{dtype, c->usable_count(asked, n), false, c->kind};
        SCOPED_TRACE(std::string(c->name) + " " + sweep_dtype_name(dtype) + " x " + std::to_string(point.count));
        const SweepResult r = run_cpu_collective(*world, *c, point, settings);
        for (const SweepTiming& t : {r.out_of_place, r.in_place}) {
          EXPECT_EQ(t.wrong, 0);
          EXPECT_EQ(t.first_wrong_rank, -1);
          expect_figures(t, point, c->busbw_factor(n));
        }
      }
    }
  }
}

// A row whose MPI call is the real one followed by one wrong element on the last rank.
const Collective* g_real = nullptr;
void corrupting_call(const MpiCollectiveCall& call) {
  g_real->run_mpi(call);
  int size = 0;
  MPI_Comm_size(call.comm, &size);
  if (call.rank == size - 1) static_cast<float*>(call.receive)[0] += 1;  // the first result element, in every form
}

TEST(CpuCollectiveSweep, AWrongResultIsCaughtNamingTheRank) {
  auto world = MpiCommunicator::world();
  const int n = world->size();
  for (const Collective* c : kEvery) {
    SCOPED_TRACE(c->name);
    g_real = c;
    Collective broken = *c;
    broken.run_mpi = corrupting_call;
    const SweepPoint point{SweepDtype::Fp32, c->usable_count(1003, n), false, c->kind};
    const SweepResult r = run_cpu_collective(*world, broken, point, SweepSettings{2, 0});
    for (const SweepTiming& t : {r.out_of_place, r.in_place}) {
      EXPECT_EQ(t.wrong, 1);
      EXPECT_EQ(t.first_wrong_rank, n - 1);
    }
  }
}

TEST(CpuCollectiveSweep, RefusesWhatMpiCannotReduce) {
  auto world = MpiCommunicator::world();
  EXPECT_THROW(run_cpu_collective(*world, kAllReduce, SweepPoint{SweepDtype::Bf16, 8, false}, SweepSettings{1, 0}),
               UserError);
}

}  // namespace
}  // namespace sb
