// A warning for image files mostly smaller than the crops the model trains on: every crop is then
// upscaled, which costs compute and adds nothing a smaller --image-size would not give.
#pragma once
#include <string>

#include "data/dataset.h"

namespace sb {

// Reads the headers of the split's first images (a few dozen, spread over its listing); when most are
// smaller than data.width on their shorter side, a line naming their commonest size and the option to
// change; otherwise "". Files that can't be read or decoded are left to the training's --bad-images.
std::string upscaling_note(const Dataset& data);

}  // namespace sb
