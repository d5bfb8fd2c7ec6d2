// The typed collectives, sub-communicators and the configuration check, on 1, 2 and 4 ranks.
// Data are random per element and depend on the rank: x(r, i) = base(i) + r * step(i), so that every
// rank can compute the closed-form sum, max and min without seeing the others' data.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/config_check.h"
#include "comm/launcher.h"
#include "comm/mpi_communicator.h"
#include "comm/mpi_session.h"
#include "comm/root_check.h"
#include "comm/string_collectives.h"
#include "core/error.h"

namespace sb {
namespace {

std::unique_ptr<MpiCommunicator> world() { return MpiCommunicator::world(); }

// A fixed pseudo-random integer per (element, stream): the same on every rank.
uint64_t mix(uint64_t i, uint64_t stream) {
  uint64_t z = i * 0x9e3779b97f4a7c15ull + stream * 0xbf58476d1ce4e5b9ull + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Small enough that sums over 4 ranks stay exact in every type, uint8 included (20 + 3 * 10 + ... < 256).
int64_t base(size_t i) { return static_cast<int64_t>(mix(i, 1) % 21); }
int64_t step(size_t i) { return static_cast<int64_t>(mix(i, 2) % 11); }
template <typename T> T value(int rank, size_t i) { return static_cast<T>(base(i) + rank * step(i)); }

template <typename T> std::vector<T> rank_data(int rank, size_t count) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = value<T>(rank, i);
  return data;
}

constexpr size_t kCount = 1000;

template <typename T> class TypedCollectives : public ::testing::Test {};
using ReducibleTypes = ::testing::Types<float, double, int32_t, int64_t, uint64_t, uint8_t>;
TYPED_TEST_SUITE(TypedCollectives, ReducibleTypes);

TYPED_TEST(TypedCollectives, AllreduceSumMaxMinMatchClosedForm) {
  using T = TypeParam;
  auto comm = world();
  const int n = comm->size();
  std::vector<T> sum = rank_data<T>(comm->rank(), kCount), max = sum, min = sum;
  comm->allreduce_sum(std::span(sum));
  comm->allreduce_max(std::span(max));
  comm->allreduce_min(std::span(min));
  for (size_t i = 0; i < kCount; ++i) {
    // sum_r (b + r s) = n b + s n (n - 1) / 2; s >= 0, so rank n-1 holds the max and rank 0 the min.
    ASSERT_EQ(sum[i], static_cast<T>(n * base(i) + step(i) * n * (n - 1) / 2)) << "element " << i;
    ASSERT_EQ(max[i], value<T>(n - 1, i)) << "element " << i;
    ASSERT_EQ(min[i], value<T>(0, i)) << "element " << i;
  }
}

TYPED_TEST(TypedCollectives, BroadcastFromLastRank) {
  using T = TypeParam;
  auto comm = world();
  const int root = comm->size() - 1;
  std::vector<T> data = rank_data<T>(comm->rank(), kCount);
  comm->broadcast(std::span(data), root);
  EXPECT_EQ(data, rank_data<T>(root, kCount));
}

TYPED_TEST(TypedCollectives, GatherAndAllgatherKeepRankOrder) {
  using T = TypeParam;
  auto comm = world();
  const int n = comm->size();
  const std::vector<T> mine = rank_data<T>(comm->rank(), 5);
  std::vector<T> expected;
  for (int r = 0; r < n; ++r) {
    const std::vector<T> block = rank_data<T>(r, 5);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  const std::vector<T> gathered = comm->gather(std::span(mine), 0);
  if (comm->rank() == 0) EXPECT_EQ(gathered, expected);
  else EXPECT_TRUE(gathered.empty());
  EXPECT_EQ(comm->allgather(std::span(mine)), expected);
}

template <typename T> class AveragedCollectives : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(AveragedCollectives, FloatTypes);

TYPED_TEST(AveragedCollectives, AllreduceAvgMatchesClosedForm) {
  using T = TypeParam;
  auto comm = world();
  const int n = comm->size();
  std::vector<T> data = rank_data<T>(comm->rank(), kCount);
  comm->allreduce_avg(std::span(data));
  for (size_t i = 0; i < kCount; ++i) {
    const double expected = static_cast<double>(base(i)) + static_cast<double>(step(i)) * (n - 1) / 2.0;
    ASSERT_NEAR(static_cast<double>(data[i]), expected, 1e-6 * (1 + expected)) << "element " << i;
  }
}

TEST(Collectives, OneValueForms) {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  EXPECT_EQ(comm->allreduce_sum(int64_t{r + 1}), int64_t{n} * (n + 1) / 2);
  EXPECT_EQ(comm->allreduce_max(double(r)), double(n - 1));
  EXPECT_EQ(comm->allreduce_min(double(r)), 0.0);
  EXPECT_DOUBLE_EQ(comm->allreduce_avg(double(r)), (n - 1) / 2.0);
  const std::vector<int32_t> ranks = comm->allgather(int32_t{r});
  ASSERT_EQ(static_cast<int>(ranks.size()), n);
  for (int i = 0; i < n; ++i) EXPECT_EQ(ranks[static_cast<size_t>(i)], i);
  const std::vector<double> times = comm->gather(0.5 * r, 0);
  if (r == 0) {
    ASSERT_EQ(static_cast<int>(times.size()), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(times[static_cast<size_t>(i)], 0.5 * i);
  }
}

TEST(Collectives, EmptySpansAreNoOps) {
  auto comm = world();
  std::vector<float> none;
  comm->allreduce_sum(std::span(none));
  comm->broadcast(std::span(none), 0);
  EXPECT_TRUE(comm->allgather(std::span(none)).empty());
}

TEST(Collectives, CharBroadcastAndStrings) {
  auto comm = world();
  std::string text = comm->rank() == 0 ? "from rank zero" : std::string(14, '?');
  comm->broadcast(std::span(text.data(), text.size()), 0);
  EXPECT_EQ(text, "from rank zero");

  // Different lengths per rank, the empty string included.
  const std::string mine(static_cast<size_t>(comm->rank()), 'a' + static_cast<char>(comm->rank()));
  const std::vector<std::string> all = allgather_strings(*comm, mine);
  ASSERT_EQ(static_cast<int>(all.size()), comm->size());
  for (int r = 0; r < comm->size(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], std::string(static_cast<size_t>(r), 'a' + static_cast<char>(r)));

  const int root = comm->size() - 1;
  EXPECT_EQ(broadcast_string(*comm, comm->rank() == root ? "root's text" : "", root), "root's text");
}

// ------------------------------------------------------------------------------------ sub-communicators

TEST(Split, FirstKRanksFormAConfigAndOthersGetNull) {
  auto comm = world();
  for (int k : {1, 2}) {
    if (k > comm->size()) continue;
    const bool member = comm->rank() < k;
    std::unique_ptr<Communicator> sub = comm->split(member ? 0 : -1, comm->rank());
    if (!member) {
      EXPECT_EQ(sub, nullptr) << "k=" << k;
      continue;
    }
    ASSERT_NE(sub, nullptr);
    EXPECT_EQ(sub->size(), k);
    EXPECT_EQ(sub->rank(), comm->rank());
    EXPECT_EQ(sub->allreduce_sum(int32_t{sub->rank() + 1}), k * (k + 1) / 2);

    std::vector<double> data = rank_data<double>(sub->rank(), kCount);
    sub->allreduce_sum(std::span(data));
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(data[i], static_cast<double>(k * base(i) + step(i) * k * (k - 1) / 2));

    std::vector<int64_t> shared = rank_data<int64_t>(sub->rank(), 7);
    sub->broadcast(std::span(shared), k - 1);
    EXPECT_EQ(shared, rank_data<int64_t>(k - 1, 7));
    EXPECT_EQ(static_cast<int>(sub->allgather(int32_t{comm->rank()}).size()), k);
    sub->barrier();
  }
}

TEST(Split, PairsWithReversedKeysAndNestedSplit) {
  auto comm = world();
  const int n = comm->size();
  const int color = comm->rank() / 2;
  const int pair_size = std::min(2, n - 2 * color);
  std::unique_ptr<Communicator> pair = comm->split(color, -comm->rank());  // key reverses the order
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(pair->size(), pair_size);
  EXPECT_EQ(pair->rank(), pair_size - 1 - comm->rank() % 2);
  // The members' world ranks, seen from inside the pair, in pair order.
  const std::vector<int32_t> members = pair->allgather(int32_t{comm->rank()});
  for (int i = 0; i < pair_size; ++i) EXPECT_EQ(members[static_cast<size_t>(i)], 2 * color + pair_size - 1 - i);

  std::unique_ptr<Communicator> single = pair->split(pair->rank(), 0);  // every rank alone
  ASSERT_NE(single, nullptr);
  EXPECT_EQ(single->size(), 1);
  EXPECT_EQ(single->allreduce_sum(int64_t{41}), 41);
}

TEST(Split, NodeLocalCommunicator) {
  auto comm = world();
  auto node = comm->split_node_local();
  // The tests run on one host: every rank is local.
  EXPECT_EQ(node->size(), comm->size());
  EXPECT_EQ(node->rank(), comm->rank());
}

// ------------------------------------------------------------------------------------ consistency checks

TEST(ConfigCheck, Fnv1aKnownValues) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

TEST(ConfigCheck, SameTextPasses) {
  auto comm = world();
  EXPECT_NO_THROW(check_same_on_all_ranks(*comm, R"({"model":"wrn","epochs":3})"));
}

// Every rank must throw, with a message naming the first rank that differs.
void expect_mismatch_names(Communicator& comm, const std::string& text, int first_differing) {
  try {
    check_same_on_all_ranks(comm, text);
    ADD_FAILURE() << "no UserError on rank " << comm.rank();
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank " + std::to_string(first_differing) + "'s configuration differs from rank 0's"),
              std::string::npos) << message;
    EXPECT_NE(message.find("launch every rank with the same arguments"), std::string::npos) << message;
  }
}

TEST(ConfigCheck, LastRankDiffering) {
  auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int last = comm->size() - 1;
  expect_mismatch_names(*comm, comm->rank() == last ? "--epochs 4" : "--epochs 3", last);
}

TEST(ConfigCheck, FirstOfSeveralDifferingRanksIsNamed) {
  auto comm = world();
  if (comm->size() < 4) GTEST_SKIP() << "needs 4 ranks";
  expect_mismatch_names(*comm, comm->rank() % 2 == 1 ? "--lr 0.2" : "--lr 0.1", 1);
}

TEST(RootCheck, ErrorOnRootReachesEveryRank) {
  auto comm = world();
  const int root = comm->size() - 1;
  EXPECT_NO_THROW(check_on_root(*comm, root, [] {}));
  try {
    check_on_root(*comm, root, [] { throw UserError("cannot write the results file 'x': it is a directory"); });
    ADD_FAILURE() << "no UserError on rank " << comm->rank();
  } catch (const UserError& error) {
    EXPECT_STREQ(error.what(), "cannot write the results file 'x': it is a directory");
  }
}

// ------------------------------------------------------------------------------------ bootstrap

TEST(MpiSession, AdoptsInitialisedMpiAndLearnsTheNodeLayout) {
  int argc = 1;
  char name[] = "test_comm";
  char* args[] = {name, nullptr};
  char** argv = args;
  MpiSession session(argc, argv);  // MPI is up already (mpi_main.cpp): adopted, not finalised
  EXPECT_EQ(session.rank(), world()->rank());
  EXPECT_EQ(session.size(), world()->size());
  EXPECT_EQ(session.local_rank(), session.rank());  // one host
  EXPECT_EQ(session.local_size(), session.size());
  EXPECT_EQ(session.node_count(), 1);
  ASSERT_EQ(static_cast<int>(session.hosts().size()), session.size());
  for (const std::string& host : session.hosts()) EXPECT_EQ(host, session.host());
  EXPECT_EQ(process_rank(), session.rank());
  EXPECT_FALSE(mpi_library_version().empty());
  // mpiexec here is Open MPI's, and it numbers ranks as MPI does.
  EXPECT_EQ(session.launcher().name, "openmpi");
  EXPECT_EQ(session.launcher().rank, session.rank());
  EXPECT_EQ(session.launcher().size, session.size());
}

// Environments as each launcher sets them.
LauncherInfo detect(const std::map<std::string, std::string>& env) {
  return detect_launcher([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Launcher, Srun) {
  const LauncherInfo info = detect({{"SLURM_JOB_ID", "4242"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"},
                                    {"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                    {"SLURM_STEP_ID", "0"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  EXPECT_EQ(info.name, "slurm");
  EXPECT_EQ(info.job_id, "4242");
  EXPECT_EQ(info.node_list, "gpu[01-02]");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.ranks_per_node, 4);
}

TEST(Launcher, MpirunInsideASlurmAllocation) {
  // The daemon's SLURM_PROCID leaks into the ranks; Open MPI's variables describe the rank.
  const LauncherInfo info = detect({{"SLURM_JOB_ID", "77"}, {"SLURM_NODELIST", "n1"}, {"SLURM_PROCID", "0"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(info.name, "openmpi");
  EXPECT_EQ(info.job_id, "77");
  EXPECT_EQ(info.node_list, "n1");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 3);
  EXPECT_EQ(info.ranks_per_node, 4);
}

TEST(Launcher, MpichHydraAndNone) {
  const LauncherInfo hydra = detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "6"}, {"MPI_LOCALRANKID", "0"},
                                     {"MPI_LOCALNRANKS", "3"}});
  EXPECT_EQ(hydra.name, "mpich");
  EXPECT_EQ(hydra.rank, 2);
  EXPECT_EQ(hydra.size, 6);
  EXPECT_EQ(hydra.ranks_per_node, 3);
  EXPECT_TRUE(hydra.job_id.empty());

  const LauncherInfo none = detect({});
  EXPECT_EQ(none.name, "none");
  EXPECT_EQ(none.rank, -1);
  EXPECT_EQ(none.ranks_per_node, 0);
}

}  // namespace
}  // namespace sb
