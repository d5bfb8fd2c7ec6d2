// The option table: one row per option, used both by the parser and by --help.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli/cli_config.h"

namespace sb {

enum CommandMask : unsigned { kTrain = 1u, kScale = 2u, kComm = 4u, kInfo = 8u };

struct OptionSpec {
  const char* name;        // without the leading dashes
  const char* value_name;  // "" for a flag (which also accepts --no-NAME)
  const char* help;
  unsigned commands;       // CommandMask bits
  std::function<void(CliConfig&, const std::string&)> set;
  std::function<std::string(const CliConfig&)> current;  // the default, shown by --help
};

const std::vector<OptionSpec>& option_table();

// Parses the options after the subcommand. Throws UserError naming the option or value on any error.
CliConfig parse_options(const std::string& command, unsigned mask, const std::vector<std::string>& args);

std::string help_text(const std::string& command, unsigned mask, const std::string& summary);

}  // namespace sb
