// Renders a NodeReading as Prometheus text: dcgm-exporter's families, labels and formatting,
// then gpunode's own. Done once per sample in the background; scrapes serve the result.
#pragma once

#include <string>

#include "metrics/node_reading.h"

namespace gpunode::metrics {

// Replaces `*out` with the exposition of `node`, reusing its capacity.
void RenderExposition(const NodeReading& node, std::string* out);

}  // namespace gpunode::metrics
