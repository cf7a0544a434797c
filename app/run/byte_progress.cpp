// Byte progress bar on stderr (see byte_progress.h).
#include "app/run/byte_progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace rota::app {
namespace {

double megabytes(int64_t bytes) {
  return static_cast<double>(bytes) / 1e6;
}

}  // namespace

ByteProgress::ByteProgress(std::string label, std::FILE* out, std::optional<bool> terminal,
                           std::function<double()> clock)
    : label_(std::move(label)), out_(out), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  terminal_ = terminal.value_or(out_ != nullptr && ::isatty(fileno(out_)));
  start_ = clock_();
}

double ByteProgress::elapsed() const {
  return clock_() - start_;
}

std::string ByteProgress::bar(int64_t done_bytes, int64_t total_bytes, double seconds,
                              const std::string& note) const {
  constexpr int kWidth = 24;
  const double fraction =
      total_bytes > 0 ? std::clamp(static_cast<double>(done_bytes) / total_bytes, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(fraction * kWidth);
  const double rate = seconds > 0 ? megabytes(done_bytes) / seconds : 0.0;
  return fmt::format("{} [{}{}] {:.1f}/{:.1f} MB  {:.1f} MB/s  {}", label_,
                     std::string(static_cast<size_t>(filled), '#'),
                     std::string(static_cast<size_t>(kWidth - filled), '.'), megabytes(done_bytes),
                     megabytes(total_bytes), rate, note);
}

void ByteProgress::update(int64_t done_bytes, int64_t total_bytes, const std::string& note) {
  if (!terminal_ || out_ == nullptr) return;
  const double now = clock_();
  if (now - last_draw_ < 0.1 && done_bytes < total_bytes) return;
  last_draw_ = now;
  std::fprintf(out_, "\r%s\x1b[K", bar(done_bytes, total_bytes, now - start_, note).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ByteProgress::finish(int64_t done_bytes) {
  if (out_ == nullptr) return;
  const double seconds = elapsed();
  if (drawn_) std::fprintf(out_, "\n");
  std::fprintf(out_, "%s: %.1f MB in %.1f s, %.1f MB/s\n", label_.c_str(), megabytes(done_bytes),
               seconds, seconds > 0 ? megabytes(done_bytes) / seconds : 0.0);
  std::fflush(out_);
}

}  // namespace rota::app
