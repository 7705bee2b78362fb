// The claims' MPS control daemons played by a test (dra/claim_mps.h): what the preparer started
// and stopped, which run, and the failure a test makes it answer.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "dra/claim_mps.h"

namespace gpunode::dra {

class FakeMpsDaemons : public MpsDaemons {
 public:
  absl::Status Start(const MpsDaemonSpec& spec) override {
    started.push_back(spec);
    if (!start_error.ok()) return start_error;
    running.insert(spec.id);
    return absl::OkStatus();
  }
  absl::Status Stop(const std::string& id) override {
    stopped.push_back(id);
    if (!stop_error.ok()) return stop_error;
    running.erase(id);
    return absl::OkStatus();
  }
  void StopAllBut(const std::set<std::string>& keep) override {
    kept.push_back(keep);
    std::erase_if(running, [&keep](const std::string& id) { return !keep.contains(id); });
  }
  std::string Root(const std::string& id) const override { return "/var/lib/kubelet/mps/" + id; }

  std::vector<MpsDaemonSpec> started;
  std::vector<std::string> stopped;
  std::vector<std::set<std::string>> kept;  // what each StopAllBut was told to keep
  std::set<std::string> running;
  absl::Status start_error;
  absl::Status stop_error;
};

}  // namespace gpunode::dra
