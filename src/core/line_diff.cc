#include "core/line_diff.h"

#include <algorithm>
#include <vector>

#include "core/text.h"

namespace gpunode::core {
namespace {

struct Line {
  std::string_view text;  // without its newline
  bool newline = true;    // false for a last line without one
  bool operator==(const Line& other) const {
    return text == other.text && newline == other.newline;
  }
};

std::vector<Line> Lines(std::string_view text) {
  std::vector<Line> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      lines.push_back({text, false});
      break;
    }
    lines.push_back({text.substr(0, end), true});
    text.remove_prefix(end + 1);
  }
  return lines;
}

// One line of the edit script: ' ' kept, '-' removed, '+' added, with its index on each side.
struct Edit {
  char op;
  size_t a;  // index in `before` (for ' ' and '-')
  size_t b;  // index in `after` (for ' ' and '+')
};

// The edit script of a longest common subsequence (dynamic programming: the files gpunode edits
// are small).
std::vector<Edit> Script(const std::vector<Line>& a, const std::vector<Line>& b) {
  std::vector<Edit> edits;
  if (a.size() > kMaxDiffLines || b.size() > kMaxDiffLines) {
    for (size_t i = 0; i < a.size(); ++i) edits.push_back({'-', i, 0});
    for (size_t j = 0; j < b.size(); ++j) edits.push_back({'+', a.size(), j});
    return edits;
  }
  std::vector<std::vector<uint32_t>> common(a.size() + 1, std::vector<uint32_t>(b.size() + 1));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      common[i][j] =
          a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      edits.push_back({' ', i++, j++});
    } else if (i < a.size() && (j == b.size() || common[i + 1][j] >= common[i][j + 1])) {
      edits.push_back({'-', i++, j});  // removals before additions, as diff prints them
    } else {
      edits.push_back({'+', i, j++});
    }
  }
  return edits;
}

std::string Range(size_t first, size_t count) {
  // diff's convention: an empty range names the line before it.
  if (count == 1) return StrCat(first + 1);
  return StrCat(count == 0 ? first : first + 1, ",", count);
}

void Append(std::string& out, char op, const Line& line) {
  StrAppend(&out, std::string(1, op), line.text, "\n");
  if (!line.newline) out += "\\ No newline at end of file\n";
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view from,
                        std::string_view to, int context) {
  if (before == after) return "";
  std::vector<Line> a = Lines(before);
  std::vector<Line> b = Lines(after);
  std::vector<Edit> edits = Script(a, b);
  std::string out = StrCat("--- ", from, "\n+++ ", to, "\n");
  std::vector<size_t> changes;
  for (size_t e = 0; e < edits.size(); ++e) {
    if (edits[e].op != ' ') changes.push_back(e);
  }
  const size_t around = static_cast<size_t>(std::max(context, 0));
  for (size_t c = 0; c < changes.size();) {
    // Changes closer than twice the context share a hunk.
    size_t last = c;
    while (last + 1 < changes.size() && changes[last + 1] - changes[last] - 1 <= 2 * around) {
      ++last;
    }
    size_t start = changes[c] >= around ? changes[c] - around : 0;
    size_t end = std::min(edits.size(), changes[last] + 1 + around);
    size_t a_count = 0, b_count = 0;
    for (size_t e = start; e < end; ++e) {
      a_count += edits[e].op != '+';
      b_count += edits[e].op != '-';
    }
    StrAppend(&out, "@@ -", Range(edits[start].a, a_count), " +", Range(edits[start].b, b_count),
              " @@\n");
    for (size_t e = start; e < end; ++e) {
      Append(out, edits[e].op, edits[e].op == '+' ? b[edits[e].b] : a[edits[e].a]);
    }
    c = last + 1;
  }
  return out;
}

}  // namespace gpunode::core
