// Progress of a long byte-counting job on stderr: a \r-redrawn bar on a terminal, else one line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace rota::app {

/// `prepare [#########.........]  412.3/1024.0 MB  40.2 MB/s  train` on a terminal (redrawn at
/// most 10 times a second); nothing while running otherwise. finish() prints the final line in
/// both cases: `prepare: 1024.0 MB in 25.4 s, 40.3 MB/s`.
class ByteProgress {
 public:
  /// terminal: default isatty(out). clock: monotonic seconds (tests pass a fake one).
  explicit ByteProgress(std::string label, std::FILE* out = stderr,
                        std::optional<bool> terminal = std::nullopt,
                        std::function<double()> clock = {});
  void update(int64_t done_bytes, int64_t total_bytes, const std::string& note);
  void finish(int64_t done_bytes);
  /// The live line for these numbers (no \r).
  std::string bar(int64_t done_bytes, int64_t total_bytes, double seconds,
                  const std::string& note) const;
  /// Seconds since construction.
  double elapsed() const;

 private:
  std::string label_;
  std::FILE* out_;
  bool terminal_;
  std::function<double()> clock_;
  double start_ = 0;
  double last_draw_ = -1e300;
  bool drawn_ = false;
};

}  // namespace rota::app
