#include "train/reporting/progress_line.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace sb {

std::string with_thousands(double v) {
  if (!std::isfinite(v)) return "n/a";  // e.g. an epoch resumed after its last step ran no timed step here
  std::string digits = std::to_string(static_cast<int64_t>(std::llround(v)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), 1, ',');
  return digits;
}

std::string utc_timestamp(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[80];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
  return text;
}

std::string clock_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "n/a";
  const int64_t s = std::llround(seconds);
  char text[40];
  std::snprintf(text, sizeof text, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return text;
}

std::string progress_line(const ProgressPoint& p, std::chrono::system_clock::time_point now) {
  const double rate = p.epoch_seconds > 0 ? static_cast<double>(p.images) / p.epoch_seconds : NAN;
  const double per_step = p.steps_timed > 0 ? p.epoch_seconds / static_cast<double>(p.steps_timed) : NAN;
  const double epoch_left = per_step * static_cast<double>(p.steps - p.step);
  const double epoch_whole = per_step * static_cast<double>(p.steps);
  const double run_left = epoch_left + p.eval_seconds + (p.epochs - p.epoch - 1) * (epoch_whole + p.eval_seconds);
  char loss[32];
  if (std::isfinite(p.loss)) std::snprintf(loss, sizeof loss, "%.4f", p.loss);
  else std::snprintf(loss, sizeof loss, "n/a");
  return utc_timestamp(now) + " epoch " + std::to_string(p.epoch + 1) + "/" + std::to_string(p.epochs) + " step " +
         std::to_string(p.step) + "/" + std::to_string(p.steps) + " | " + with_thousands(rate) + " img/s, " +
         with_thousands(rate / p.ranks) + " per " + p.rank_unit + " | loss " + loss + " | ETA epoch " +
         clock_duration(epoch_left) + ", run " + clock_duration(run_left);
}

bool ProgressSchedule::due(double seconds) {
  if (every_ <= 0 || seconds - last_ < every_) return false;
  last_ = seconds;
  return true;
}

}  // namespace sb
