// The output check names the file it refuses: the results file, or the checkpoint and its option.
#include "metrics/results_output_check.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"

namespace sb {
namespace {

std::string refusal(const std::string& path, const std::string& what) {
  try {
    if (what.empty()) check_output_writable(path);
    else check_output_writable(path, what);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(ResultsOutputCheck, NamesTheResultsFileByDefault) {
  EXPECT_EQ(refusal("/no-such-directory/F.h5", ""),
            "cannot write the results file '/no-such-directory/F.h5': the directory '/no-such-directory' does not exist");
}

TEST(ResultsOutputCheck, NamesTheCheckpointAndItsOption) {
  const std::string directory = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(refusal(directory, "the checkpoint file (--checkpoint)"),
            "cannot write the checkpoint file (--checkpoint) '" + directory + "': it is a directory");
}

}  // namespace
}  // namespace sb
