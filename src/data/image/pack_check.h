// pack's check of the images it is about to write: each is read as training reads it (encoded_images.h)
// and decoded whole, on `workers` threads, before any shard is written, so that a shard never holds a file
// that training would fail on.
#pragma once
#include <string>
#include <vector>

#include "data/image/image_folder.h"

namespace sb {

// The problem of each image ("" for one that reads and decodes), in the order of `images`: a sentence
// that names the file and the cause. workers >= 1.
std::vector<std::string> undecodable_images(const std::vector<ImageFile>& images, int workers);

}  // namespace sb
