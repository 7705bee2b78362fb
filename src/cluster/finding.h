// One thing audit found: a stable id, how bad it is, the object, what is wrong and how to fix it.
#pragma once

#include <string>
#include <string_view>

namespace gpunode::cluster {

enum class Severity { kInfo, kWarning, kError };

std::string_view SeverityName(Severity severity);

struct Finding {
  std::string id;  // stable: scripts match on it (see docs/CLUSTER.md)
  Severity severity = Severity::kWarning;
  std::string object;  // node/NAME, pod/NS/NAME, job/NS/NAME, cronjob/NS/NAME or image/NAME
  std::string message;
  std::string fix;
};

}  // namespace gpunode::cluster
