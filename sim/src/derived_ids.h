// Identifiers the simulator has to invent when its input does not carry them (UUIDs of GPUs in
// profiles that leave them out, and of MIG devices, which captures do not list). They are hashes
// of stable facts, so the same input gives the same identifiers on every run and every machine.
#pragma once

#include <string>
#include <string_view>

namespace gpunode::sim {

// "<prefix>-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" with 128 bits taken from a hash of `seed`.
std::string derived_uuid(std::string_view prefix, std::string_view seed);

}  // namespace gpunode::sim
