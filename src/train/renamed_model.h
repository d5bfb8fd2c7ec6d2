// `resnet18` named ResNet-18's CIFAR variant, now `resnet18-cifar`, until it came to mean torchvision's
// ResNet-18. The same change added the `zero_init_residual` option, which every configuration written
// since records, so a configuration that names `resnet18` without that key is older and means the CIFAR
// variant. The resume checks and `predict --study` read such a configuration as `resnet18-cifar`.
#pragma once
#include <string>

namespace sb {

// Whether a configuration JSON (a checkpoint's, a results file's) names the CIFAR variant by its old
// name; `what` names the configuration in the refusal of malformed JSON.
bool names_the_cifar_resnet18_by_its_old_name(const std::string& config_json, const std::string& what);

}  // namespace sb
