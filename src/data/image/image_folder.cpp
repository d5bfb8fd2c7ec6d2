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

// The split's class folders, sorted by name.
std::vector<std::string> class_names(const fs::path& split) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(split, ec);
  if (ec) unreadable(split, ec);
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) unreadable(split, ec);
    std::error_code dir_ec;
    if (it->is_directory(dir_ec)) names.push_back(it->path().filename().string());
  }
  if (ec) unreadable(split, ec);
  if (names.empty()) throw UserError("'" + split.string() + "' holds no class folders; " + kLayout);
  std::sort(names.begin(), names.end());  // std::string compares bytes as unsigned: Python's order for UTF-8
  return names;
}

// The images under one class folder, sorted by (folder, name).
std::vector<std::string> class_images(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink, ec);
  if (ec) unreadable(folder, ec);
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) unreadable(folder, ec);
    std::error_code file_ec;
    const std::string name = it->path().filename().string();
    if (has_image_extension(name) && it->is_regular_file(file_ec)) found.emplace_back(it->path().parent_path().string(), name);
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
               std::vector<ImageFile>& out) {
  for (const std::string& name : names) {
    const auto at = std::lower_bound(classes.begin(), classes.end(), name);
    if (at == classes.end() || *at != name) {
      throw UserError("class folder '" + (split / name).string() + "' has no counterpart in train/; every class of val/ " +
                      "must be one of train/'s (their numbers come from train/)");
    }
    const auto label = static_cast<int32_t>(at - classes.begin());
    for (std::string& path : class_images(split / name)) out.push_back(ImageFile{std::move(path), label});
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

ImageFolder list_image_folder(const std::string& root) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) unreadable(root, ec);
  if (!is_dir) throw UserError("image folder '" + root + "' does not exist or is not a folder; " + kLayout);
  const fs::path train = split_folder(root, "train");
  const fs::path val = split_folder(root, "val");
  ImageFolder folder;
  folder.root = root;
  folder.classes = class_names(train);
  const std::vector<std::string> val_names = class_names(val);
  add_split(train, folder.classes, folder.classes, folder.train);
  add_split(val, val_names, folder.classes, folder.val);
  return folder;
}

}  // namespace sb
