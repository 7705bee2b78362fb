// Feeds arbitrary bytes to `cluster verify`'s judgement of a smoke pod's log: whatever the
// container printed (gpunode doctor's JSON report, or anything another image writes).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/smoke_pod.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::cluster;
  std::string_view log(reinterpret_cast<const char*>(data), size);
  for (std::string_view phase : {"Succeeded", "Failed"}) {
    for (bool doctor : {true, false}) {
      VerifyStep step;
      JudgeSmokePod(phase, log, doctor, 2, step);
    }
  }
  return 0;
}
