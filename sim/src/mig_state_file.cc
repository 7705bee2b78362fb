#include "mig_state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "file_descriptor.h"
#include "messages.h"

namespace gpunode::sim {
namespace {

constexpr const char* kHeader = "gpunode-sim-mig-state 1";

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

struct SavedGpu {
  bool enabled = false;
  bool pending = false;
  std::vector<GpuInstanceState> instances;
};

}  // namespace

bool load_mig_state(NodeState& node, const std::string& path, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return true;
    error = str_cat("GPUNODE_SIM_STATE ", path, ": ", std::strerror(errno),
                    "; make the file readable or name another");
    return false;
  }
  auto fail = [&](size_t line, const std::string& what) {
    error = str_cat("GPUNODE_SIM_STATE ", path, ":", line, ": ", what,
                    "; delete the file to start from the profile's layout");
    return false;
  };
  std::string text;
  size_t line_number = 0;
  if (!std::getline(in, text) || text != kHeader) return fail(1, "not a simulator state file");
  ++line_number;
  std::vector<std::pair<unsigned, SavedGpu>> gpus;  // GPU index -> saved layout
  SavedGpu* current = nullptr;
  const MigProductTable* table = nullptr;
  while (std::getline(in, text)) {
    ++line_number;
    std::istringstream fields(text);
    std::string kind;
    fields >> kind;
    if (kind.empty()) continue;
    if (kind == "gpu") {
      std::string uuid;
      int enabled = -1, pending = -1;
      if (!(fields >> uuid >> enabled >> pending) || enabled < 0 || enabled > 1 || pending < 0 ||
          pending > 1) {
        return fail(line_number, "expected: gpu <uuid> <0|1> <0|1>");
      }
      current = nullptr;
      for (unsigned g = 0; g < node.gpus().size(); ++g) {
        if (node.gpus()[g].model().uuid != uuid) continue;
        table = node.mig_layout(g).table();
        if (table == nullptr) break;
        gpus.push_back({g, SavedGpu{enabled == 1, pending == 1, {}}});
        current = &gpus.back().second;
      }
    } else if (kind == "gi") {
      unsigned id = 0, profile_id = 0, start = 0;
      if (!(fields >> id >> profile_id >> start))
        return fail(line_number, "expected: gi <id> <profile id> <start>");
      if (current == nullptr) continue;
      const GpuInstanceProfile* profile = find_profile_by_id(*table, profile_id);
      if (profile == nullptr)
        return fail(line_number, str_cat("no GPU instance profile ", profile_id));
      GpuInstanceState gi;
      gi.id = id;
      gi.profile = profile;
      gi.start = start;
      current->instances.push_back(std::move(gi));
    } else if (kind == "ci") {
      unsigned id = 0, index = 0, start = 0;
      if (!(fields >> id >> index >> start))
        return fail(line_number, "expected: ci <id> <profile index> <start>");
      if (current == nullptr) continue;
      auto slices = compute_profile_slices(index);
      if (current->instances.empty() || !slices)
        return fail(line_number,
                    "compute instance without a GPU instance or with an unknown profile");
      current->instances.back().compute_instances.push_back({id, index, start, *slices, nullptr});
    } else {
      return fail(line_number, str_cat("unknown record \"", kind, "\""));
    }
  }
  for (auto& [gpu, saved] : gpus) {
    if (!node.mig_layout(gpu).restore(saved.enabled, saved.pending, std::move(saved.instances)))
      return fail(line_number, str_cat("the layout saved for GPU ", gpu, " does not fit it"));
    node.publish_mig_layout(gpu);
  }
  return true;
}

bool save_mig_state(NodeState& node) {
  const std::string& path = node.mig_state_file();
  if (path.empty()) return true;
  std::string text = str_cat(kHeader, "\n");
  for (unsigned g = 0; g < node.gpus().size(); ++g) {
    MigLayout& layout = node.mig_layout(g);
    if (layout.table() == nullptr) continue;
    text += str_cat("gpu ", node.gpus()[g].model().uuid.value_or(""), " ", layout.enabled() ? 1 : 0,
                    " ", layout.pending() ? 1 : 0, "\n");
    for (const GpuInstanceState& gi : layout.gpu_instances()) {
      text += str_cat("gi ", gi.id, " ", gi.profile->id, " ", gi.start, "\n");
      for (const ComputeInstanceState& ci : gi.compute_instances)
        text += str_cat("ci ", ci.id, " ", ci.profile_index, " ", ci.start, "\n");
    }
  }
  // Written beside the target and renamed over it, so a reader sees the old or the new state.
  std::string temporary = str_cat(path, ".tmp.", ::getpid());
  FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return false;
  bool ok = write_all(fd.get(), text) && ::fsync(fd.get()) == 0;
  ok = fd.close() && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace gpunode::sim
