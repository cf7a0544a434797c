// Thread-local switch that turns graph recording off (NoGradGuard), as torch.no_grad().
#pragma once

namespace rota {

/// True while operations record a backward graph (the default).
bool grad_enabled();
void set_grad_enabled(bool enabled);

/// Disables graph recording for its lifetime; restores the previous mode on destruction.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace rota
