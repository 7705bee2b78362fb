// A loader's answer: the value, or the one-line message that says what is wrong with the input.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace gpunode::sim {

template <typename T>
class LoadResult {
 public:
  LoadResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design, like StatusOr
  static LoadResult failure(std::string message) {
    LoadResult result;
    result.error_ = std::move(message);
    return result;
  }

  bool ok() const { return value_.has_value(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  const std::string& error() const { return error_; }

 private:
  LoadResult() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace gpunode::sim
