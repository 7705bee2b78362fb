// A unified diff of two texts, line by line, as `diff -u` prints it: what `--dry-run` shows of a
// file gpunode would change, so that an operator reads the lines that move, not the whole file.
#pragma once

#include <string>
#include <string_view>

namespace gpunode::core {

// "--- FROM\n+++ TO\n" and hunks with `context` unchanged lines around each change; "" when the
// texts are equal. A text without a final newline gets diff's "\ No newline at end of file".
// Texts of more than kMaxDiffLines lines each are compared as one hunk of the whole files.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view from,
                        std::string_view to, int context = 3);

// The comparison keeps a table of (lines + 1)^2 counts: 16 MiB at this size.
inline constexpr size_t kMaxDiffLines = 2000;

}  // namespace gpunode::core
