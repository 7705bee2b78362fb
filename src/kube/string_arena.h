// Owns the text of every name, key and value a snapshot keeps, so the object views can hold
// 16-byte string_views instead of one heap allocation per string (150,000 pods add up).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace gpunode::kube {

class StringArena {
 public:
  StringArena() = default;
  StringArena(const StringArena&) = delete;
  StringArena& operator=(const StringArena&) = delete;

  // Copies `text` into the arena; the view stays valid as long as the arena lives.
  std::string_view Copy(std::string_view text);
  // Like Copy, but returns the same view for equal text: namespaces, node names, label keys.
  std::string_view Intern(std::string_view text);

 private:
  static constexpr size_t kBlockSize = 64 * 1024;

  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = kBlockSize;  // forces a block on first use
  absl::flat_hash_set<std::string_view> interned_;
};

}  // namespace gpunode::kube
