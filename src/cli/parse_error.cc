#include "cli/parse_error.h"

#include <algorithm>
#include <set>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/nearest.h"

namespace gpunode::cli {
namespace {

// The global options that take a value, whose value is not a command name.
const std::set<std::string>& GlobalOptionsWithValue() {
  static const std::set<std::string> kOptions = {
      "--sim", "--sim-topology", "--driver-root", "--nvml-library", "--host-root", "--log-level"};
  return kOptions;
}

// The first word after position `from` that is neither an option nor the value of a global
// option: what the user meant as the (sub)command.
std::string FirstWord(const std::vector<std::string>& args, size_t from) {
  for (size_t i = from; i < args.size(); ++i) {
    if (args[i].rfind("-", 0) != 0) return args[i];
    if (GlobalOptionsWithValue().count(args[i]) > 0) ++i;
  }
  return "";
}

// The deepest command the parser entered ("gpunode cluster audit") and its App.
struct Entered {
  std::string path;
  const CLI::App* app;
};

Entered DeepestCommand(const CLI::App& root) {
  Entered entered{root.get_name(), &root};
  for (;;) {
    std::vector<const CLI::App*> parsed =
        entered.app->get_subcommands([](const CLI::App* sub) { return sub->parsed(); });
    if (parsed.empty()) return entered;
    entered.app = parsed.front();
    absl::StrAppend(&entered.path, " ", entered.app->get_name());
  }
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// CLI11 lists unexpected arguments last first; the user typed them first first.
std::string InTypedOrder(const std::string& listed, const std::vector<std::string>& args) {
  std::vector<std::string> words = absl::StrSplit(listed, ' ', absl::SkipEmpty());
  auto position = [&](const std::string& word) {
    return std::find(args.begin(), args.end(), word) - args.begin();
  };
  std::stable_sort(words.begin(), words.end(), [&](const std::string& a, const std::string& b) {
    return position(a) < position(b);
  });
  return absl::StrJoin(words, " ");
}

}  // namespace

std::string ParsedCommandPath(const CLI::App& app) { return DeepestCommand(app).path; }

bool AsksForVersion(const std::vector<std::string>& args) {
  size_t command = std::find(args.begin(), args.end(), FirstWord(args, 0)) - args.begin();
  return std::find(args.begin(), args.begin() + command, "--version") != args.begin() + command;
}

std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error,
                               const std::vector<std::string>& args) {
  Entered entered = DeepestCommand(app);
  std::string help = absl::StrCat(" (see ", entered.path, " --help)");
  std::string message = absl::StrReplaceAll(error.what(), {{"\n", "; "}});
  std::vector<std::string> names = CommandNames(*entered.app);
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && !names.empty() &&
      message.find("subcommand") != std::string::npos) {
    // The word after the last command the parser knew is the command the user meant.
    size_t from = 0;
    if (entered.app != &app) {
      from = std::find(args.begin(), args.end(), entered.app->get_name()) - args.begin() + 1;
    }
    std::string word = FirstWord(args, from);
    if (word.empty()) {
      return absl::StrCat("a command is required: ", absl::StrJoin(names, ", "), help);
    }
    std::string nearest = core::NearestName(word, names);
    return absl::StrCat("unknown command ", word,
                        nearest.empty() ? "" : absl::StrCat("; did you mean ", nearest, "?"), help);
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    constexpr std::string_view kPrefix = "not expected: ";
    if (size_t at = message.find(kPrefix); at != std::string::npos) {
      message = absl::StrCat("unexpected argument(s): ",
                             InTypedOrder(message.substr(at + kPrefix.size()), args));
    }
  }
  return absl::StrCat(message, help);
}

}  // namespace gpunode::cli
