#include "core/stop_signal.h"

#include <csignal>
#include <initializer_list>

namespace sb {
namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void remember_signal(int signal) { g_signal = signal; }
}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int s : {SIGTERM, SIGUSR1, SIGINT}) sigaction(s, &action, nullptr);
}

int stop_signal_received() { return g_signal; }

}  // namespace sb
