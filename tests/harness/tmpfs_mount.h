// A tmpfs of a chosen size mounted on a directory while the object lives: a real filesystem
// whose statvfs(2) capacity the test decides. tmpfs takes memory only for what is written, so a
// terabyte-sized one costs nothing. Needs root (CAP_SYS_ADMIN).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gpunode::testing {

class TmpfsMount {
 public:
  // Creates `dir` (and its parents) and mounts a tmpfs of `size_bytes` on it.
  TmpfsMount(const std::filesystem::path& dir, uint64_t size_bytes);
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }  // why it is not mounted
  // Writes a file of `bytes` (allocated, not sparse) so that the filesystem's use grows by it.
  bool Fill(const std::string& name, uint64_t bytes) const;

 private:
  std::filesystem::path dir_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace gpunode::testing
