// Early-return helpers for absl::Status / absl::StatusOr, which abseil 20220623 does not ship.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPUNODE_CONCAT_INNER(a, b) a##b
#define GPUNODE_CONCAT(a, b) GPUNODE_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                     \
  do {                                            \
    if (::absl::Status _st = (expr); !_st.ok()) { \
      return _st;                                 \
    }                                             \
  } while (0)

// Declares or assigns `lhs` from a StatusOr expression, returning its status on error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(GPUNODE_CONCAT(_status_or_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)    \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()
