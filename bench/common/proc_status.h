// A process's /proc/PID/status as name -> value ("VmRSS" -> "11804 kB"), for the benchmarks that
// report a daemon's resident memory.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <map>
#include <string>

namespace gpunode::bench {

inline std::map<std::string, std::string> ProcStatus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    out[line.substr(0, colon)] = value;
  }
  return out;
}

}  // namespace gpunode::bench
