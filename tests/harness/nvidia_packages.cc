#include "nvidia_packages.h"

#include <algorithm>
#include <filesystem>

namespace gpunode::testing {

namespace fs = std::filesystem;

std::vector<std::string> NvidiaDebs() {
  std::vector<std::string> debs;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(kNvidiaDebCache, ec)) {
    if (entry.path().extension() == ".deb") debs.push_back(entry.path());
  }
  std::sort(debs.begin(), debs.end());
  return debs;
}

std::string NvidiaDeb(const std::string& package) {
  for (const std::string& deb : NvidiaDebs()) {
    if (fs::path(deb).filename().string().starts_with(package + "_")) return deb;
  }
  return "";
}

std::vector<pid_t> ProcessesUnder(const std::string& dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link;
    fs::path exe = fs::read_symlink(entry.path() / "exe", link);
    if (!link && exe.string().starts_with(dir)) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace gpunode::testing
