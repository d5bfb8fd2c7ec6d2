// The options of a training run, one row each. A row holds everything about its option: the command
// line's name, value and help text, the subcommands that take it, its key in the configuration JSON,
// the values it accepts, and how a resume treats it. Parsing and --help (src/cli/options.cpp),
// TrainConfig::validate(), to_json() and from_json() (what results files and checkpoints record), and
// the resume checks (train/checkpoint/resume_check.h) all read these rows. The rules that join two options are the
// short list next to validate() in train_config_rows.cpp.
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/on_off.h"  // a flag's value from its text
#include "train/train_config.h"

namespace sb {

// The subcommands an option belongs to.
enum CommandMask : unsigned { kTrain = 1u, kScale = 2u, kComm = 4u, kInfo = 8u };

// How a recorded option may differ between a checkpoint's run and its resume.
enum class ResumeRule {
  Same,      // must be equal
  Free,      // may differ: output, logging, tracing and checkpointing
  NotFewer,  // --epochs: at least the epochs the checkpoint has begun
  SameData,  // --data: the same data set, compared in canonical form
};

// The values a numeric option accepts: an interval whose ends may be open or infinite, and a hint
// that its refusal ends with.
struct Bounds {
  double lowest = -std::numeric_limits<double>::infinity();
  double highest = std::numeric_limits<double>::infinity();
  bool lowest_open = false;
  bool highest_open = false;
  const char* hint = "";

  bool contains(double v) const;
  // The rule as the refusal states it: "must be at least 1", "must be positive", "must lie in [0, 1)".
  std::string rule() const;
};

// What a row does with its TrainConfig field. `option` is the row's name, for messages.
struct OptionField {
  // Sets the field from command-line text and checks it as `check` does; throws UserError naming the
  // option and the value.
  std::function<void(TrainConfig&, const std::string& text, const char* option)> parse;
  // The value as --help shows it: text parse() takes, or a note ("none", "default: ...") for an unset one.
  std::function<std::string(const TrainConfig&)> show;
  // Throws UserError naming the option and the value when the field lies outside what the row accepts.
  std::function<void(const TrainConfig&, const char* option)> check;
  // The value as JSON text, and back; from_json returns false for text to_json could not have written.
  std::function<std::string(const TrainConfig&)> to_json;
  std::function<bool(TrainConfig&, const std::string& json)> from_json;
  std::optional<Bounds> bounds;      // numeric options
  std::vector<std::string> choices;  // named options: the names parse() accepts (in any case)
};

struct TrainOption {
  const char* name;        // on the command line, without the dashes
  const char* value_name;  // "" for a flag (which also accepts --no-NAME)
  std::string help;
  unsigned commands;       // CommandMask bits
  const char* json_key;    // in the configuration JSON; nullptr: not recorded
  ResumeRule resume;
  OptionField field;
  // A value option that --no-NAME turns off: the field's parse() gets the empty text.
  bool clearable = false;
  // The key an older scalebench recorded this option under, read as this row (nullptr: none).
  const char* old_json_key = nullptr;
};

// Every option of TrainConfig, in the order of --help and of the configuration JSON.
std::span<const TrainOption> train_options();

// Whether an older scalebench recorded `key` for an option that is gone: reading a configuration skips it.
bool is_retired_json_key(std::string_view key);
// The row recording the JSON key `key` (or recorded it under an older name); nullptr when no row records it.
const TrainOption* train_option_for_key(std::string_view key);
// The row of --name (without the dashes); nullptr for a name no row has.
const TrainOption* train_option_named(std::string_view name);

}  // namespace sb
