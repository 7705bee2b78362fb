// Reading numbers out of the text forms nvidia-smi and profile authors write them in.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpunode::sim {

// Without leading and trailing whitespace (spaces, tabs, line breaks).
std::string_view trim(std::string_view text);

// An unsigned integer, decimal or 0x-prefixed hex, the whole text; no sign, no spaces.
std::optional<uint64_t> parse_uint(std::string_view text);

// A non-negative decimal such as "26.58" scaled by 10^decimals and rounded half up:
// parse_fixed("26.58", 3) == 26580. Exact (no floating point), so "66.92 W" is 66920 mW.
std::optional<uint64_t> parse_fixed(std::string_view text, int decimals);

// A number followed by an expected unit, separated by optional spaces: parse_with_unit("36 C",
// "C"). The number may have a fraction; it is scaled by 10^decimals. nullopt for anything else,
// which covers "N/A", "[Not Supported]" and the other ways nvidia-smi says "no value".
std::optional<uint64_t> parse_with_unit(std::string_view text, std::string_view unit,
                                        int decimals = 0);

}  // namespace gpunode::sim
