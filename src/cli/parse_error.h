// CLI11's parse errors as gpunode reports every error: one line, in the order the user typed,
// naming the command to ask for help, and an unknown command with the nearest one suggested.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace gpunode::cli {

// The message for `error`, raised while `app` parsed `args` (argv without the program name).
std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error,
                               const std::vector<std::string>& args);

// The deepest command the parser entered, from the program's name: "gpunode cluster audit".
std::string ParsedCommandPath(const CLI::App& app);

// Whether the command line is `gpunode [global options] --version`.
bool AsksForVersion(const std::vector<std::string>& args);

}  // namespace gpunode::cli
