// SIGINT and SIGTERM for the long-running commands (exporter, labels, webhook): blocked before any
// thread starts, so every thread (gRPC's and the HTTP servers' included) inherits the mask and
// only the main thread takes them, with sigwait or sigtimedwait, and shuts down in order.
#pragma once

#include <signal.h>

namespace gpunode::cli {

// Blocks SIGINT and SIGTERM in the calling thread and returns the set to wait on.
sigset_t BlockStopSignals();

}  // namespace gpunode::cli
