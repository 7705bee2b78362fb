#include "kube/string_arena.h"

#include <cstring>

namespace gpunode::kube {

std::string_view StringArena::Copy(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() > kBlockSize / 4) {
    // Large strings get their own block so they do not waste the tail of a shared one.
    auto block = std::make_unique<char[]>(text.size());
    std::memcpy(block.get(), text.data(), text.size());
    std::string_view out(block.get(), text.size());
    blocks_.insert(blocks_.end() - (blocks_.empty() ? 0 : 1), std::move(block));
    return out;
  }
  if (used_ + text.size() > kBlockSize) {
    blocks_.push_back(std::make_unique<char[]>(kBlockSize));
    used_ = 0;
  }
  char* dst = blocks_.back().get() + used_;
  std::memcpy(dst, text.data(), text.size());
  used_ += text.size();
  return {dst, text.size()};
}

std::string_view StringArena::Intern(std::string_view text) {
  if (auto it = interned_.find(text); it != interned_.end()) return *it;
  std::string_view copy = Copy(text);
  interned_.insert(copy);
  return copy;
}

}  // namespace gpunode::kube
