#include "core/fault_injection.h"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace sb {
namespace {
struct Fault {
  int rank = -1;
  std::string point;
};

Fault requested_fault() {
  Fault fault;
  const char* text = std::getenv("SCALEBENCH_FAULT");
  if (text == nullptr) return fault;
  const std::string spec = text;
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return fault;
  fault.rank = std::atoi(spec.substr(0, colon).c_str());
  fault.point = spec.substr(colon + 1);
  return fault;
}
}  // namespace

void inject_fault_if_asked(const char* point, long count) {
  static const Fault fault = requested_fault();
  if (fault.rank < 0 || fault.rank != process_rank() || fault.point != point) return;
  if (fault.point == "load") throw std::bad_alloc();
  if (fault.point == "step" && count == 1) throw std::runtime_error("injected fault in the second training step (SCALEBENCH_FAULT)");
}

}  // namespace sb
