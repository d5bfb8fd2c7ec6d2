// `scalebench pack SRC DST`: an image folder (ROOT/train/CLASS/*, ROOT/val/CLASS/*) into WebDataset tar
// shards (src/data/image/pack_shards.h). Host code only; it runs on one process.
#include <cstdio>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "data/image/pack_shards.h"
#include "data/worker_count.h"

namespace sb {
namespace {

const char* const kPackHelp =
    "usage: scalebench pack SRC DST [--shard-size N] [--seed S] [--workers N] [--bad-images fail|skip]\n"
    "\n"
    "Packs the image folder SRC (SRC/train/CLASS/IMAGE, SRC/val/CLASS/IMAGE: torchvision's ImageFolder layout)\n"
    "into WebDataset tar shards: DST/train-000000.tar ..., DST/val-000000.tar ... and DST/classes.txt.\n"
    "Each sample is KEY.jpg or KEY.png (the file's bytes, unchanged) and KEY.cls (its class index); each\n"
    "split is shuffled with a fixed seed first, so that every shard mixes classes. DST must be absent or an\n"
    "empty folder: pack never overwrites. Every image is decoded before any shard is written; hidden folders\n"
    "and files (.ipynb_checkpoints, ._*.jpg) are left out and named.\n"
    "\n"
    "options:\n"
    "  --shard-size N  samples per shard (default 1000)\n"
    "  --seed S        seed of the shuffle (default 0)\n"
    "  --workers N     threads that decode the images first (default 0: the cores this process may use)\n"
    "  --bad-images W  a file that can't be read or decoded: fail (default) refuses it before anything is\n"
    "                  written, naming it; skip leaves it out and names it\n"
    "  --help          this text\n";

struct PackArgs {
  PackOptions options;
  bool help = false;
};

PackArgs parse_pack_args(const std::vector<std::string>& args) {
  PackArgs out;
  out.options.workers = default_input_workers(1);
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    if ((a == "--shard-size" || a == "--seed" || a == "--workers" || a == "--bad-images") && i + 1 >= args.size())
      throw UserError(a + " needs a value (see scalebench pack --help)");
    if (a == "--workers") {
      const int n = static_cast<int>(to_int_in("workers", args[++i], 0, 1024));
      out.options.workers = n > 0 ? n : default_input_workers(1);
    } else if (a == "--bad-images") {
      const std::string& v = args[++i];
      const std::optional<BadImages> choice = find_by_name<BadImages>(v);
      if (!choice) throw UserError("--bad-images " + v + ": give " + name_list<BadImages>(" or ") + " (see scalebench pack --help)");
      out.options.bad_images = *choice;
    } else if (a == "--shard-size" || a == "--seed") {
      // 0 reads: pack_image_folder refuses a shard size below 1 with its own sentence.
      const int64_t n = to_int_in(a.substr(2), args[++i], 0, kInt64Max);
      if (a == "--shard-size") out.options.shard_size = n;
      else out.options.seed = static_cast<uint64_t>(n);
    } else if (a.rfind("--", 0) == 0) {
      throw UserError("pack has no option '" + a + "'; its options are --shard-size, --seed, --workers and --bad-images (see scalebench pack --help)");
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    throw UserError("pack takes two paths, SRC (an image folder) and DST (the shards' folder); got " +
                    std::to_string(positional.size()) + " (see scalebench pack --help)");
  }
  out.options.source = positional[0];
  out.options.destination = positional[1];
  return out;
}

}  // namespace

int pack_command(MpiSession& session, const std::vector<std::string>& args) {
  const bool root = session.rank() == 0;
  if (session.size() != 1)
    throw AgreedError("pack runs on one process; start it without mpirun (or with -np 1)", session.size(), root);
  PackArgs parsed;
  try {
    parsed = parse_pack_args(args);
  } catch (const UserError& e) {
    throw AgreedError(e.what(), session.size(), root);
  }
  if (parsed.help) {
    std::fputs(kPackHelp, stdout);
    return 0;
  }
  PackSummary s;
  try {
    s = pack_image_folder(parsed.options, [](const std::string& line) { std::printf("pack: wrote %s\n", line.c_str()); });
  } catch (const UserError& e) {
    throw AgreedError(e.what(), session.size(), root);  // one process: it is the whole job
  }
  if (!s.left_out.empty()) std::printf("%s", s.left_out.c_str());
  if (!s.skipped.empty()) {
    std::printf("pack: --bad-images skip left out %zu file(s) that can't be read or decoded:\n", s.skipped.size());
    for (const std::string& problem : s.skipped) std::printf("  %s\n", problem.c_str());
  }
  std::printf("pack: %lld classes; train: %lld samples in %lld shards; val: %lld samples in %lld shards; in %s\n",
              static_cast<long long>(s.classes), static_cast<long long>(s.train_samples),
              static_cast<long long>(s.train_shards), static_cast<long long>(s.val_samples),
              static_cast<long long>(s.val_shards), parsed.options.destination.c_str());
  return 0;
}

}  // namespace sb
