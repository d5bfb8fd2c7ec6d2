// Publishing the results file: a unique staging name per run, the operating system's reason when it
// fails, and no staging or working file left behind.
#include "metrics/results_publish.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "child_process.h"
#include "core/error.h"
#include "core/host_name.h"
#include "scratch_dir.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

class ResultsPublishTest : public test::ScratchDirTest {
 protected:
  std::string path(const char* name) const { return (dir_ / name).string(); }
  static std::string read_text(const std::string& file) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::vector<std::string> names() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    return found;
  }
};

TEST(UniqueWorkingPath, NamesTheSuffixHostAndProcess) {
  const std::string expected = "/x/F.h5.writing." + this_host_name() + "." + std::to_string(::getpid());
  EXPECT_EQ(unique_working_path("/x/F.h5", "writing"), expected);
  EXPECT_EQ(working_path_of("/x/F.h5", "publishing", "n1", 12), "/x/F.h5.publishing.n1.12");
  const test::ChildResult child = test::run_in_child([] {  // another process, another name
    std::_Exit(unique_working_path("/x/F.h5", "writing") == "/x/F.h5.writing." + this_host_name() + "." + std::to_string(::getppid()) ? 1 : 0);
  });
  EXPECT_EQ(child.exit_code, 0);
}

TEST_F(ResultsPublishTest, ReplacesTheTargetAndLeavesNoStagingFile) {
  std::ofstream(path("work")) << "new results";
  std::ofstream(path("F.h5")) << "old";
  publish_copy(path("work"), path("F.h5"));
  EXPECT_EQ(read_text(path("F.h5")), "new results");
  EXPECT_EQ(names(), (std::vector<std::string>{"F.h5", "work"}));
}

TEST_F(ResultsPublishTest, AFailedWriteNamesTheFileAndTheReasonAndRemovesTheStagingFile) {
  std::ofstream(path("work")) << std::string(64 * 1024, 'r');
  std::ofstream(path("F.h5")) << "published before";
  const test::ChildResult child = test::run_in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{8 * 1024, 8 * 1024};  // files may not grow past 8 KiB: the copy fails with EFBIG
    ::setrlimit(RLIMIT_FSIZE, &limit);
    publish_copy(path("work"), path("F.h5"));
  });
  EXPECT_EQ(child.exit_code, 3);
  const std::string& said = child.stderr_text;
  EXPECT_NE(said.find("could not publish the results file " + path("F.h5")), std::string::npos) << said;
  EXPECT_NE(said.find("File too large"), std::string::npos) << said;
  EXPECT_NE(said.find("ulimit -f"), std::string::npos) << said;  // the hint
  EXPECT_EQ(said.find("Input/output error"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_EQ(read_text(path("F.h5")), "published before");  // the last published copy stays whole
  EXPECT_EQ(names(), (std::vector<std::string>{"F.h5", "work"}));
}

TEST_F(ResultsPublishTest, TheJobAbortRemovesThisProcesssWorkingFiles) {
  const std::string other_run = working_path_of(path("F.h5"), "writing", "other-node", 1);
  std::ofstream(other_run) << "another run's";
  const test::ChildResult child = test::run_in_child([&] {
    std::ofstream(unique_working_path(path("F.h5"), "writing")) << "partial";
    std::ofstream(unique_working_path(path("F.h5.ckpt.h5"), "writing")) << "partial";
    fatal("a failed library call");
  });
  EXPECT_EQ(child.exit_code, 3);
  EXPECT_EQ(names(), std::vector<std::string>{fs::path(other_run).filename().string()});
}

}  // namespace
}  // namespace sb
