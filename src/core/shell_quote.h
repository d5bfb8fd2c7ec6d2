// Shell quoting, so that a recorded command line can be pasted back into a POSIX shell.
#pragma once
#include <string>
#include <vector>

namespace sb {

// `word` as one POSIX shell word: unchanged when it holds only characters no shell treats specially,
// otherwise in single quotes (a single quote inside becomes '\'').
std::string shell_quote(const std::string& word);

// The words quoted and joined with spaces.
std::string shell_command_line(const std::vector<std::string>& words);

}  // namespace sb
