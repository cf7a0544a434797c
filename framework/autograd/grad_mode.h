// Thread-local switch that turns graph recording off (NoGradGuard, as torch.no_grad()) or on.
#pragma once

namespace rota {

/// True while operations record a backward graph (the default).
bool grad_enabled();
void set_grad_enabled(bool enabled);

/// Sets graph recording on or off for its lifetime; restores the previous mode on destruction.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

/// Disables graph recording for its lifetime; restores the previous mode on destruction.
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace rota
