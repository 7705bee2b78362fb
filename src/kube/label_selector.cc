#include "kube/label_selector.h"

#include <algorithm>

#include "core/text.h"

namespace gpunode::kube {
namespace {

bool IsSelectorSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimSelector(std::string_view s) {
  while (!s.empty() && IsSelectorSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSelectorSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A key or value as a term holds it: no spaces, no operator characters.
bool IsSelectorWord(std::string_view s) {
  return !s.empty() && s.find_first_of(" \t=!(),<>") == std::string_view::npos;
}

// The terms of a selector: split at the commas outside parentheses.
std::vector<std::string_view> SelectorTerms(std::string_view text) {
  std::vector<std::string_view> terms;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '(') ++depth;
    if (i < text.size() && text[i] == ')') --depth;
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      terms.push_back(TrimSelector(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  return terms;
}

}  // namespace

absl::StatusOr<LabelSelector> ParseLabelSelector(std::string_view text) {
  LabelSelector selector;
  selector.present = true;
  if (TrimSelector(text).empty()) return selector;
  for (std::string_view term : SelectorTerms(text)) {
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          core::StrCat("\"", term, "\": ", why,
                       "; use key=value, key!=value, key, !key, key in (a,b) or key notin (a,b), "
                       "comma-separated"));
    };
    if (term.empty()) return bad("an empty term");
    LabelRequirement req;
    if (size_t open = term.find('('); open != std::string_view::npos) {
      if (term.back() != ')') return bad("a set must end with )");
      std::string_view head = TrimSelector(term.substr(0, open));
      size_t space = head.find_last_of(" \t");
      if (space == std::string_view::npos) return bad("expected key in (...) or key notin (...)");
      req.key = TrimSelector(head.substr(0, space));
      std::string_view op = head.substr(space + 1);
      if (op == "in") {
        req.op = "In";
      } else if (op == "notin") {
        req.op = "NotIn";
      } else {
        return bad("expected in or notin before the set");
      }
      std::string_view values = term.substr(open + 1, term.size() - open - 2);
      size_t start = 0;
      for (size_t i = 0; i <= values.size(); ++i) {
        if (i < values.size() && values[i] != ',') continue;
        std::string_view value = TrimSelector(values.substr(start, i - start));
        if (!value.empty() && !IsSelectorWord(value)) return bad("a bad value in the set");
        req.values.push_back(value);
        start = i + 1;
      }
    } else if (size_t ne = term.find("!="); ne != std::string_view::npos) {
      req.key = TrimSelector(term.substr(0, ne));
      req.op = "NotIn";
      req.values.push_back(TrimSelector(term.substr(ne + 2)));
    } else if (size_t eq = term.find('='); eq != std::string_view::npos) {
      size_t skip = term.compare(eq, 2, "==") == 0 ? 2 : 1;
      req.key = TrimSelector(term.substr(0, eq));
      req.op = "In";
      req.values.push_back(TrimSelector(term.substr(eq + skip)));
    } else if (term.front() == '!') {
      req.key = TrimSelector(term.substr(1));
      req.op = "DoesNotExist";
    } else {
      req.key = term;
      req.op = "Exists";
    }
    if (!IsSelectorWord(req.key)) return bad("a bad key");
    for (std::string_view value : req.values) {
      if (!value.empty() && !IsSelectorWord(value)) return bad("a bad value");
    }
    selector.match_expressions.push_back(std::move(req));
  }
  return selector;
}

bool Matches(const LabelSelector& selector, const Labels& labels) {
  if (!selector.present) return false;
  for (const auto& [key, value] : selector.match_labels) {
    auto v = FindLabel(labels, key);
    if (!v || *v != value) return false;
  }
  for (const LabelRequirement& req : selector.match_expressions) {
    auto v = FindLabel(labels, req.key);
    bool in_values = v && std::find(req.values.begin(), req.values.end(), *v) != req.values.end();
    if (req.op == "In" && !in_values) return false;
    if (req.op == "NotIn" && in_values) return false;
    if (req.op == "Exists" && !v) return false;
    if (req.op == "DoesNotExist" && v) return false;
    if (req.op != "In" && req.op != "NotIn" && req.op != "Exists" && req.op != "DoesNotExist") {
      return false;  // the API server rejects other operators; never match what we cannot read
    }
  }
  return true;
}

}  // namespace gpunode::kube
