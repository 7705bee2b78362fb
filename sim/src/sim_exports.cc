// The simulator's own exported entry points (sim/include/gpunode_sim.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "builtin_profiles.h"
#include "gpunode_sim.h"
#include "simulator.h"

extern "C" {

int gpunodeSimConfigure(const char* spec, const char* topology_file, char* error,
                        unsigned error_len) {
  std::string message;
  int result = gpunode::sim::Simulator::instance().configure(spec, topology_file, message);
  if (result != 0 && error != nullptr && error_len > 0) {
    size_t n = std::min<size_t>(message.size(), error_len - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return result;
}

const char* gpunodeSimBuiltinProfiles(void) {
  // Built once; the list is fixed at build time.
  static const std::string names = gpunode::sim::builtin_profile_names(",");
  return names.c_str();
}

}  // extern "C"
