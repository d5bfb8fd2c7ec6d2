#include "train/renamed_model.h"

#include "train/config_json.h"

namespace sb {

bool names_the_cifar_resnet18_by_its_old_name(const std::string& config_json, const std::string& what) {
  bool names_resnet18 = false, records_zero_init_residual = false;
  for (const auto& [key, value] : flat_json_members(config_json, what)) {
    if (key == "model" && value == "\"resnet18\"") names_resnet18 = true;
    if (key == "zero_init_residual") records_zero_init_residual = true;
  }
  return names_resnet18 && !records_zero_init_residual;
}

}  // namespace sb
