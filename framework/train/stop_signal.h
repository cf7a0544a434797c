// Turning SIGINT/SIGTERM into a "stop at the next step boundary" request for the training loop.
#pragma once

namespace rota::train {

/// While alive, the first SIGINT or SIGTERM only records the signal (the loop checkpoints and
/// stops at the next step boundary); a second one restores the default action and re-raises,
/// so a user can always kill a stuck run with another Ctrl-C. The previous handlers come back
/// on destruction. One guard at a time.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  /// The signal received (SIGINT or SIGTERM), or 0.
  static int requested();
  /// Forgets a received signal (tests).
  static void clear();
};

}  // namespace rota::train
