#include <algorithm>
#include <map>

#include "messages.h"
#include "text_values.h"
#include "topology_matrix.h"

namespace gpunode::sim {
namespace {

// More GPUs than any node has; bounds the work a hostile file can ask for.
constexpr size_t kMaxTopologyGpus = 1024;
// More links than NVML can report between two GPUs, even through NVSwitches.
constexpr uint64_t kMaxNvLinks = 1000;

enum class ColumnKind { kGpu, kOther, kCpuAffinity, kNumaAffinity, kGpuNumaId };

struct Column {
  ColumnKind kind;
  std::string name;
};

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::optional<size_t> gpu_number(std::string_view field) {
  if (field.size() < 4 || field.substr(0, 3) != "GPU") return std::nullopt;
  auto number = parse_uint(field.substr(3));
  bool leading_zero = field[3] == '0' && field.size() > 4;
  if (!number || leading_zero || *number >= kMaxTopologyGpus) return std::nullopt;
  return static_cast<size_t>(*number);
}

// Header words, with the multi-word affinity column names joined back together.
std::vector<Column> header_columns(const std::vector<std::string_view>& fields) {
  std::vector<Column> columns;
  for (size_t i = 0; i < fields.size(); ++i) {
    auto next_is = [&](size_t k, std::string_view word) {
      return i + k < fields.size() && fields[i + k] == word;
    };
    if (fields[i] == "CPU" && next_is(1, "Affinity")) {
      columns.push_back({ColumnKind::kCpuAffinity, "CPU Affinity"});
      i += 1;
    } else if (fields[i] == "NUMA" && next_is(1, "Affinity")) {
      columns.push_back({ColumnKind::kNumaAffinity, "NUMA Affinity"});
      i += 1;
    } else if (fields[i] == "GPU" && next_is(1, "NUMA") && next_is(2, "ID")) {
      columns.push_back({ColumnKind::kGpuNumaId, "GPU NUMA ID"});
      i += 2;
    } else if (gpu_number(fields[i])) {
      columns.push_back({ColumnKind::kGpu, std::string(fields[i])});
    } else {
      columns.push_back({ColumnKind::kOther, std::string(fields[i])});
    }
  }
  return columns;
}

std::optional<TopologyCell> parse_cell(std::string_view text) {
  static const std::map<std::string_view, nvmlGpuTopologyLevel_t> kLevels = {
      {"X", NVML_TOPOLOGY_INTERNAL},   {"PIX", NVML_TOPOLOGY_SINGLE},
      {"PXB", NVML_TOPOLOGY_MULTIPLE}, {"PHB", NVML_TOPOLOGY_HOSTBRIDGE},
      {"NODE", NVML_TOPOLOGY_NODE},    {"SYS", NVML_TOPOLOGY_SYSTEM},
      {"SOC", NVML_TOPOLOGY_SYSTEM},
  };
  if (auto it = kLevels.find(text); it != kLevels.end()) return TopologyCell{0, it->second};
  if (text.size() > 2 && text.substr(0, 2) == "NV") {
    auto links = parse_uint(text.substr(2));
    if (links && *links > 0 && *links <= kMaxNvLinks) {
      return TopologyCell{static_cast<int>(*links), NVML_TOPOLOGY_SYSTEM};
    }
  }
  return std::nullopt;
}

std::string cell_label(const TopologyCell& cell) {
  if (cell.nvlinks > 0) return "NV" + std::to_string(cell.nvlinks);
  switch (cell.level) {
    case NVML_TOPOLOGY_INTERNAL:
      return "X";
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    default:
      return "SYS";
  }
}

bool operator==(const TopologyCell& a, const TopologyCell& b) {
  return a.nvlinks == b.nvlinks && (a.nvlinks > 0 || a.level == b.level);
}

constexpr std::string_view kLabels = "X, NV<n>, PIX, PXB, PHB, NODE or SYS";

}  // namespace

LoadResult<TopologyMatrix> parse_topology(std::string_view text, const TopologySource& source) {
  auto fail = [&](int line, const std::string& what) {
    std::string where =
        line > 0 ? str_cat(source.name, ":", line + source.line_offset) : source.name;
    return LoadResult<TopologyMatrix>::failure(str_cat(where, ": ", what));
  };
  std::vector<Column> columns;
  size_t gpu_columns = 0;
  int header_line = 0;
  std::vector<std::optional<std::vector<std::string_view>>> rows;  // cells by GPU number
  std::vector<int> row_lines;
  int line_number = 0;
  size_t position = 0;
  while (position <= text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    std::vector<std::string_view> fields = split_fields(line);
    if (fields.empty()) continue;
    bool legend = fields[0] == "Legend:" || fields[0] == "Legend" ||
                  (fields[0] == "NIC" && fields.size() > 1 && fields[1] == "Legend:");
    if (legend) break;
    if (columns.empty()) {
      if (!gpu_number(fields[0])) continue;  // text before the matrix, e.g. a shell prompt
      header_line = line_number;
      columns = header_columns(fields);
      while (gpu_columns < columns.size() && columns[gpu_columns].kind == ColumnKind::kGpu) {
        if (columns[gpu_columns].name != "GPU" + std::to_string(gpu_columns)) {
          return fail(line_number,
                      str_cat("header column ", gpu_columns + 1, " is ",
                              quote(columns[gpu_columns].name), ", expected GPU", gpu_columns,
                              "; the header must list GPU0, GPU1, ... in order"));
        }
        ++gpu_columns;
      }
      rows.assign(gpu_columns, std::nullopt);
      row_lines.assign(gpu_columns, 0);
      continue;
    }
    auto row = gpu_number(fields[0]);
    if (!row) continue;  // a NIC row
    if (*row >= gpu_columns) {
      return fail(line_number,
                  str_cat("row ", fields[0], " has no column in the header, which lists ",
                          gpu_columns, " GPUs"));
    }
    if (rows[*row]) {
      return fail(line_number, str_cat("row ", fields[0], " appears twice (first on line ",
                                       row_lines[*row] + source.line_offset, ")"));
    }
    rows[*row] = std::vector<std::string_view>(fields.begin() + 1, fields.end());
    row_lines[*row] = line_number;
  }
  if (columns.empty() || gpu_columns == 0) {
    return fail(0,
                "no matrix found: expected a header line starting with GPU0 as `nvidia-smi topo "
                "-m` prints it");
  }

  TopologyMatrix matrix;
  matrix.cells.assign(gpu_columns, std::vector<TopologyCell>(gpu_columns));
  matrix.numa_nodes.assign(gpu_columns, std::nullopt);
  std::vector<std::string> cpu_affinity(gpu_columns);
  bool has_numa_column = false;
  for (size_t r = 0; r < gpu_columns; ++r) {
    if (!rows[r]) {
      return fail(header_line,
                  str_cat("the header lists ", gpu_columns, " GPUs but there is no row GPU", r));
    }
    const std::vector<std::string_view>& cells = *rows[r];
    if (cells.size() < gpu_columns) {
      return fail(row_lines[r], str_cat("row GPU", r, " has ", cells.size(),
                                        " cells but the header lists ", gpu_columns, " GPUs"));
    }
    for (size_t c = 0; c < gpu_columns; ++c) {
      auto cell = parse_cell(cells[c]);
      if (!cell) {
        return fail(row_lines[r], str_cat("row GPU", r, ", column GPU", c, ": unknown label ",
                                          quote(cells[c]), "; use ", kLabels));
      }
      bool diagonal = r == c;
      bool is_self = cell->nvlinks == 0 && cell->level == NVML_TOPOLOGY_INTERNAL;
      if (diagonal != is_self) {
        return fail(row_lines[r],
                    str_cat("row GPU", r, ", column GPU", c, ": ", quote(cells[c]),
                            diagonal ? " on the diagonal; a GPU's own cell must be X"
                                     : " off the diagonal; X marks only a GPU's own cell"));
      }
      matrix.cells[r][c] = *cell;
    }
    // Columns after the GPUs are positional; an empty trailing cell simply is not there.
    for (size_t k = gpu_columns; k < columns.size() && k < cells.size(); ++k) {
      if (columns[k].kind == ColumnKind::kNumaAffinity) {
        has_numa_column = true;
        if (auto node = parse_uint(cells[k]); node && *node < 4096) {
          matrix.numa_nodes[r] = static_cast<unsigned>(*node);
        }
      } else if (columns[k].kind == ColumnKind::kCpuAffinity) {
        cpu_affinity[r] = std::string(cells[k]);
      }
    }
  }
  for (size_t r = 0; r < gpu_columns; ++r) {
    for (size_t c = r + 1; c < gpu_columns; ++c) {
      if (!(matrix.cells[r][c] == matrix.cells[c][r])) {
        return fail(row_lines[c],
                    str_cat("row GPU", c, ", column GPU", r, " is ", cell_label(matrix.cells[c][r]),
                            " but row GPU", r, ", column GPU", c, " is ",
                            cell_label(matrix.cells[r][c]), "; the matrix must be symmetric"));
      }
    }
  }
  if (!has_numa_column) {
    // Older captures have only CPU Affinity: GPUs that share a CPU set share a NUMA node.
    std::vector<std::string> seen;
    for (size_t r = 0; r < gpu_columns; ++r) {
      if (cpu_affinity[r].empty() || cpu_affinity[r] == "N/A") continue;
      auto it = std::find(seen.begin(), seen.end(), cpu_affinity[r]);
      if (it == seen.end()) it = seen.insert(seen.end(), cpu_affinity[r]);
      matrix.numa_nodes[r] = static_cast<unsigned>(it - seen.begin());
    }
  }
  return matrix;
}

}  // namespace gpunode::sim
