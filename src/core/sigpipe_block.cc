#include "core/sigpipe_block.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace gpunode::core {
namespace {

sigset_t PipeOnly() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

}  // namespace

SigpipeBlock::SigpipeBlock() {
  sigset_t pipe_only = PipeOnly();
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_);
  sigset_t pending;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
}

SigpipeBlock::~SigpipeBlock() {
  sigset_t pending;
  sigpending(&pending);
  if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
    sigset_t pipe_only = PipeOnly();
    timespec none{};
    while (sigtimedwait(&pipe_only, nullptr, &none) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace gpunode::core
