// The recorded command line must paste back into a POSIX shell as the same words.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/shell_quote.h"

namespace sb {
namespace {

TEST(ShellQuote, PlainWordsStayAsTheyAre) {
  EXPECT_EQ(shell_quote("--out"), "--out");
  EXPECT_EQ(shell_quote("results/run-1.h5"), "results/run-1.h5");
  EXPECT_EQ(shell_quote("synthetic:1x28x28:10"), "synthetic:1x28x28:10");
}

TEST(ShellQuote, SpecialWordsAreSingleQuoted) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// The real test: /bin/sh splits the quoted line back into exactly the original words.
TEST(ShellQuote, TheShellReadsBackTheSameWords) {
  const std::vector<std::string> words = {"scalebench", "train", "--out", "/tmp/with space's/run.h5", "--data",
                                          "a;b|c&d", "*", "\"quoted\"", "tab\there", "back\\slash", "$(echo no)"};
  const std::string script = "for w in " + shell_command_line(words) + "; do printf '%s\\n' \"$w\"; done";
  FILE* shell = popen(("/bin/sh -c " + shell_quote(script)).c_str(), "r");
  ASSERT_NE(shell, nullptr);
  std::vector<std::string> read;
  char line[512];
  while (std::fgets(line, sizeof line, shell)) {
    std::string word = line;
    if (!word.empty() && word.back() == '\n') word.pop_back();
    read.push_back(word);
  }
  ASSERT_EQ(pclose(shell), 0);
  EXPECT_EQ(read, words);
}

}  // namespace
}  // namespace sb
