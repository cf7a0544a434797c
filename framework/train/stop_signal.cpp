// SIGINT/SIGTERM handlers that request a clean stop (see stop_signal.h).
#include "framework/train/stop_signal.h"

#include <atomic>
#include <csignal>

#include "framework/base/error.h"

namespace rota::train {
namespace {

std::atomic<int> g_requested{0};
std::atomic<bool> g_installed{false};
struct sigaction g_previous_int, g_previous_term;

extern "C" void on_stop_signal(int signal) {
  int expected = 0;
  if (!g_requested.compare_exchange_strong(expected, signal)) {
    // Second signal: give up on the clean stop.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  ROTA_CHECK(!g_installed.exchange(true), "StopSignalGuard: a guard is already installed");
  g_requested = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  g_requested = 0;  // a signal this guard caught must not stop a later run without a guard
  g_installed = false;
}

int StopSignalGuard::requested() {
  return g_requested.load();
}
void StopSignalGuard::clear() {
  g_requested = 0;
}

}  // namespace rota::train
