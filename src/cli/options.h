// The option table of the command line, used both by the parser and by --help: the rows of TrainConfig's
// options (train/train_options.h), then the settings of `scale` and `comm`.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli/cli_config.h"
#include "train/train_options.h"

namespace sb {

struct OptionSpec {
  const char* name;        // without the leading dashes
  const char* value_name;  // "" for a flag (which also accepts --no-NAME)
  const char* help;
  unsigned commands;       // CommandMask bits
  std::function<void(CliConfig&, const std::string&)> set;
  std::function<std::string(const CliConfig&)> current;  // the default, shown by --help
  bool clearable = false;  // a value option that --no-NAME sets to the empty text
};

const std::vector<OptionSpec>& option_table();

// Parses the options after the subcommand. Throws UserError naming the option or value on any error.
CliConfig parse_options(const std::string& command, unsigned mask, const std::vector<std::string>& args);

std::string help_text(const std::string& command, unsigned mask, const std::string& summary);

}  // namespace sb
