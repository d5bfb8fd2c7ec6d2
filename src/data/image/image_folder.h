// torchvision's ImageFolder layout, with a train and a val split:
//   ROOT/train/CLASS/IMAGE ...   ROOT/val/CLASS/IMAGE ...
// Classes are train/'s sub-folders sorted by name in byte order (as Python's sorted() orders them) and
// numbered 0..K-1; val/ uses train/'s numbers. Within a class, files are walked recursively and sorted
// by folder, then name (as torchvision's sorted(os.walk(...))). Only files with torchvision's image
// extensions count; their content decides how they decode. Hidden folders and files (a name that starts
// with a dot, such as .ipynb_checkpoints) are left out, where torchvision would take them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/image_decoding.h"

namespace sb {

struct ImageFile {
  std::string path;
  int32_t label = 0;
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // index = label
  std::vector<ImageFile> train, val;
  std::vector<std::string> hidden;    // left out: hidden folders, and hidden files with an image extension (relative to root)
  std::vector<std::string> dangling;  // left out under --bad-images skip: links to nothing (relative to root)
};

// torchvision's IMG_EXTENSIONS (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp), case-insensitive.
bool has_image_extension(const std::string& file_name);

// Lists the whole tree before any work. Throws sb::UserError naming the folder, with a hint, for a missing
// train/ or val/, a split without class folders, a class folder without images, a class in val/ that
// train/ lacks, and a folder that can't be read. A link to nothing with an image extension is a file that
// can't be read: under BadImages::Fail it is refused here, naming it; under Skip it is left out and listed.
ImageFolder list_image_folder(const std::string& root, BadImages bad_images = BadImages::Fail);

// The lines that name what the listing left out ("" when nothing was): one for the hidden entries, one for
// the links to nothing, each naming the first few and counting the rest.
std::string left_out_lines(const ImageFolder& folder);

}  // namespace sb
