// deploy/exporter says what the exporter does: the PrometheusRule carries the tested rule file's
// groups, and the dashboard and alerts only use metrics the exporter exports.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "build_paths.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "process.h"
#include "yaml-cpp/yaml.h"

namespace gpunode {
namespace {

const std::string kDeploy = std::string(build_paths::kSourceDir) + "/deploy/exporter";

std::string Emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

TEST(Deploy, PrometheusRuleCarriesTheTestedRules) {
  YAML::Node rules = YAML::LoadFile(kDeploy + "/alerts.rules.yaml");
  YAML::Node manifest = YAML::LoadFile(kDeploy + "/prometheusrule.yaml");
  EXPECT_EQ(manifest["kind"].as<std::string>(), "PrometheusRule");
  EXPECT_EQ(Emit(manifest["spec"]["groups"]), Emit(rules["groups"]));
}

// Names of the metric families one scrape of a node with zombies, MIG and XIDs has.
std::set<std::string> ExportedNames() {
  std::set<std::string> names;
  for (const std::string& spec : {std::string("a100-mig"), std::string(build_paths::kFixturesDir) +
                                                               "/metrics/xid-lost.yaml"}) {
    testing::ProcessResult r = testing::RunProcess(
        {build_paths::kBinary, "--sim", spec, "exporter", "--once", "--pod-resources-socket", ""});
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# TYPE ", 0) == 0) names.insert(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  // Families that only appear with a kubelet, zombies or XIDs (see exporter_test).
  names.insert({"gpunode_orphan_gpu_processes", "gpunode_xid_errors_total",
                "gpunode_pod_resources_up", "up"});
  return names;
}

std::set<std::string> MetricsIn(const std::string& expr) {
  static const std::set<std::string> kPromQL = {
      "sum", "count", "by",  "or",     "unless", "offset", "increase", "time", "vector", "instance",
      "gpu", "xid",   "job", "orphan", "avg",    "max",    "min",      "and",  "on",     "rate"};
  std::set<std::string> out;
  std::regex identifier(R"([A-Za-z_][A-Za-z0-9_]*)");
  // Drop label matchers, strings and template variables first.
  std::string text =
      std::regex_replace(expr, std::regex(R"(\{[^}]*\}|"[^"]*"|\$\w+|\[[^\]]*\])"), " ");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), identifier);
       it != std::sregex_iterator(); ++it) {
    std::string word = it->str();
    if (!kPromQL.contains(word) && !std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('_') != std::string::npos)
      out.insert(word);
  }
  return out;
}

TEST(Deploy, AlertsAndDashboardUseExportedMetrics) {
  std::set<std::string> exported = ExportedNames();
  YAML::Node rules = YAML::LoadFile(kDeploy + "/alerts.rules.yaml");
  int alerts = 0;
  for (const YAML::Node& group : rules["groups"]) {
    for (const YAML::Node& rule : group["rules"]) {
      ++alerts;
      for (const std::string& metric : MetricsIn(rule["expr"].as<std::string>()))
        EXPECT_TRUE(exported.contains(metric)) << rule["alert"] << ": " << metric;
    }
  }
  EXPECT_EQ(alerts, 8);
  std::ifstream in(kDeploy + "/dashboard.json");
  nlohmann::json dashboard = nlohmann::json::parse(in);
  int exprs = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      ++exprs;
      for (const std::string& metric : MetricsIn(target["expr"].get<std::string>()))
        EXPECT_TRUE(exported.contains(metric)) << panel["title"] << ": " << metric;
    }
  }
  EXPECT_GE(exprs, 10);
}

}  // namespace
}  // namespace gpunode
