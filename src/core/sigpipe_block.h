// Writing to a pipe or socket whose reader has gone raises SIGPIPE, whose default action ends
// the process. A SigpipeBlock blocks it on the calling thread for its scope, so such a write
// fails with EPIPE instead, and takes off the queue a SIGPIPE raised meanwhile (as libcurl does).
#pragma once

#include <signal.h>

namespace gpunode::core {

class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace gpunode::core
