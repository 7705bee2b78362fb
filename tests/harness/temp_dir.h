// A temporary directory for a test, removed with everything in it when the object goes.
#pragma once

#include <string>

namespace gpunode::testing {

class TempDir {
 public:
  // Made under $TMPDIR (or /tmp) as `prefix`-XXXXXX; throws when that fails.
  explicit TempDir(const std::string& prefix = "gpunode-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `contents` to `name` (relative to the directory; its parent must exist) and returns
  // the file's path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace gpunode::testing
