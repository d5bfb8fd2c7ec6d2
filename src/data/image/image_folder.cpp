#include "data/image/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>
#include <utility>

#include "core/error.h"

namespace fs = std::filesystem;

namespace sb {
namespace {

const char* const kLayout = "an image folder holds ROOT/train/CLASS/IMAGE and ROOT/val/CLASS/IMAGE (torchvision's ImageFolder layout)";

[[noreturn]] void unreadable(const fs::path& folder, const std::error_code& ec) {
  throw UserError("cannot read the folder '" + folder.string() + "': " + ec.message() + " (check that it exists and its permissions)");
}

fs::path split_folder(const fs::path& root, const char* split) {
  const fs::path folder = root / split;
  std::error_code ec;
  const bool is_dir = fs::is_directory(folder, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) unreadable(folder, ec);
  if (!is_dir) throw UserError("image folder '" + root.string() + "' has no " + split + "/ folder; " + kLayout);
  return folder;
}

bool is_hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

// What the listing left out, relative to its root, for the notes.
struct LeftOut {
  fs::path root;
  BadImages bad_images = BadImages::Fail;
  std::vector<std::string> hidden, dangling;
  std::string relative(const fs::path& p) const { return p.lexically_relative(root).string(); }
};

// The split's class folders, sorted by name.
std::vector<std::string> class_names(const fs::path& split, LeftOut& left_out) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(split, ec);
  if (ec) unreadable(split, ec);
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) unreadable(split, ec);
    std::error_code dir_ec;
    if (!it->is_directory(dir_ec)) continue;
    const std::string name = it->path().filename().string();
    if (is_hidden(name)) left_out.hidden.push_back(left_out.relative(it->path()));
    else names.push_back(name);
  }
  if (ec) unreadable(split, ec);
  if (names.empty()) throw UserError("'" + split.string() + "' holds no class folders; " + kLayout);
  std::sort(names.begin(), names.end());  // std::string compares bytes as unsigned: Python's order for UTF-8
  return names;
}

// The images under one class folder, sorted by (folder, name).
std::vector<std::string> class_images(const fs::path& folder, LeftOut& left_out) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink, ec);
  if (ec) unreadable(folder, ec);
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) unreadable(folder, ec);
    std::error_code file_ec;
    const std::string name = it->path().filename().string();
    if (is_hidden(name)) {
      if (it->is_directory(file_ec)) {
        it.disable_recursion_pending();
        left_out.hidden.push_back(left_out.relative(it->path()));
      } else if (has_image_extension(name)) {
        left_out.hidden.push_back(left_out.relative(it->path()));
      }
      continue;
    }
    if (!has_image_extension(name)) continue;
    if (it->is_regular_file(file_ec)) {
      found.emplace_back(it->path().parent_path().string(), name);
    } else if (it->is_symlink(file_ec) && !fs::exists(it->path(), file_ec)) {
      if (left_out.bad_images == BadImages::Fail)
        throw UserError("'" + it->path().string() + "' is a link to nothing ('" + fs::read_symlink(it->path(), file_ec).string() +
                        "' is missing); remove the link or restore its target, or give --bad-images skip to leave such files out");
      left_out.dangling.push_back(left_out.relative(it->path()));
    }
  }
  if (ec) unreadable(folder, ec);
  if (found.empty()) {
    throw UserError("class folder '" + folder.string() +
                    "' holds no images (files ending .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp); "
                    "remove the folder or add its images");
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const auto& [dir, name] : found) paths.push_back((fs::path(dir) / name).string());
  return paths;
}

void add_split(const fs::path& split, const std::vector<std::string>& names, const std::vector<std::string>& classes,
               std::vector<ImageFile>& out, LeftOut& left_out) {
  for (const std::string& name : names) {
    const auto at = std::lower_bound(classes.begin(), classes.end(), name);
    if (at == classes.end() || *at != name) {
      throw UserError("class folder '" + (split / name).string() + "' has no counterpart in train/; every class of val/ " +
                      "must be one of train/'s (their numbers come from train/)");
    }
    const auto label = static_cast<int32_t>(at - classes.begin());
    for (std::string& path : class_images(split / name, left_out)) out.push_back(ImageFile{std::move(path), label});
  }
}

}  // namespace

bool has_image_extension(const std::string& file_name) {
  static const char* const kExtensions[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
  std::string lower = file_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ext : kExtensions) {
    const std::string e(ext);
    if (lower.size() >= e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

ImageFolder list_image_folder(const std::string& root, BadImages bad_images) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) unreadable(root, ec);
  if (!is_dir) throw UserError("image folder '" + root + "' does not exist or is not a folder; " + kLayout);
  const fs::path train = split_folder(root, "train");
  const fs::path val = split_folder(root, "val");
  ImageFolder folder;
  folder.root = root;
  LeftOut left_out{root, bad_images, {}, {}};
  folder.classes = class_names(train, left_out);
  const std::vector<std::string> val_names = class_names(val, left_out);
  add_split(train, folder.classes, folder.classes, folder.train, left_out);
  add_split(val, val_names, folder.classes, folder.val, left_out);
  folder.hidden = std::move(left_out.hidden);
  folder.dangling = std::move(left_out.dangling);
  std::sort(folder.hidden.begin(), folder.hidden.end());  // the folders list in the file system's order
  std::sort(folder.dangling.begin(), folder.dangling.end());
  return folder;
}

namespace {
// "PREFIX: a, b, c and 4 more\n", or "" for no names.
std::string named_line(const std::string& prefix, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  constexpr size_t kShown = 5;
  std::string line = prefix;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) line += (i == 0 ? ": " : ", ") + names[i];
  if (names.size() > kShown) line += " and " + std::to_string(names.size() - kShown) + " more";
  return line + "\n";
}
}  // namespace

std::string left_out_lines(const ImageFolder& folder) {
  return named_line("image folder " + folder.root + ": left out, hidden", folder.hidden) +
         named_line("image folder " + folder.root + ": left out, links to nothing (--bad-images skip)", folder.dangling);
}

}  // namespace sb
