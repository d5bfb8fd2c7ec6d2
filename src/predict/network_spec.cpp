#include "predict/network_spec.h"

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace sb::predict {
namespace {

const char* kForm = "the form nodes=2,gpus-per-node=4,inter=ib:200Gbps[,latency=5us]";

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  throw UserError("--network '" + text + "': " + why + "; expected " + kForm);
}

// A positive number followed by one of `units` (name, factor); the longest unit that ends the text wins.
double number_with_unit(const std::string& text, const std::string& value, const std::string& key,
                        std::initializer_list<std::pair<const char*, double>> units) {
  for (const auto& [unit, factor] : units) {
    const std::string u = unit;
    if (value.size() <= u.size() || value.compare(value.size() - u.size(), u.size(), u) != 0) continue;
    const std::string digits = value.substr(0, value.size() - u.size());
    double x = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
    if (ec != std::errc() || end != digits.data() + digits.size() || !(x > 0)) break;
    return x * factor;
  }
  std::string names;
  for (const auto& [unit, factor] : units) names += (names.empty() ? "" : ", ") + std::string(unit);
  refuse(text, key + " '" + value + "' is not a positive number with a unit (" + names + ")");
}

int64_t positive_count(const std::string& text, const std::string& key, const std::string& value) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
  if (ec != std::errc() || end != value.data() + value.size() || x < 1) refuse(text, key + " '" + value + "' is not a positive integer");
  return x;
}

}  // namespace

NetworkSpec parse_network_spec(const std::string& text) {
  NetworkSpec spec;
  std::optional<double> bandwidth, latency;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos) refuse(text, "'" + part + "' is not KEY=VALUE");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "nodes") {
      spec.nodes = positive_count(text, key, value);
    } else if (key == "gpus-per-node") {
      spec.gpus_per_node = positive_count(text, key, value);
    } else if (key == "inter") {
      const size_t colon = value.find(':');
      if (colon == std::string::npos || colon == 0) refuse(text, "inter '" + value + "' is not NAME:BANDWIDTH (ib:200Gbps)");
      spec.link_name = value.substr(0, colon);
      // GB/s before Gbps would not matter (different endings); bytes per second either way.
      bandwidth = number_with_unit(text, value.substr(colon + 1), "the bandwidth", {{"Gbps", 1e9 / 8}, {"GB/s", 1e9}});
    } else if (key == "latency") {
      latency = number_with_unit(text, value, key, {{"us", 1e-6}, {"ms", 1e-3}, {"ns", 1e-9}});
    } else {
      refuse(text, "unknown key '" + key + "'");
    }
  }
  if (text.empty()) refuse(text, "it is empty");
  if (latency && !bandwidth) refuse(text, "latency is given without inter");
  if (bandwidth) spec.inter = RingLevel{latency.value_or(kDefaultInterLatencySeconds), *bandwidth};
  return spec;
}

}  // namespace sb::predict
