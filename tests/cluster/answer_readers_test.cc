// The readers src/cluster keeps for answers that are not Kubernetes objects: Prometheus's
// instant vectors and the doctor report a smoke pod prints.
#include <gtest/gtest.h>

#include <string>

#include "cluster/doctor_report.h"
#include "cluster/prometheus_query.h"

namespace gpunode::cluster {
namespace {

std::string ErrorOf(const absl::Status& status) {
  return status.ok() ? "ok" : std::string(status.message());
}

TEST(InstantVectorTest, ReadsLabelsAndValues) {
  absl::StatusOr<std::vector<PromSample>> samples = ParseInstantVector(
      R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"Hostname":"gpu-a","gpu":"0"},"value":[1714557600.5,"79"]},
          {"metric":{},"value":[1714557600,"0.5"]}]}})");
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].labels.at("Hostname"), "gpu-a");
  EXPECT_EQ((*samples)[0].value, 79);
  EXPECT_EQ((*samples)[1].value, 0.5);
}

TEST(InstantVectorTest, SaysWhatIsWrong) {
  EXPECT_NE(ErrorOf(ParseInstantVector("<html>").status()).find("is --prometheus"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(ParseInstantVector(R"({"status":"error","error":"bad query"})").status()),
            "Prometheus: the query failed: bad query");
  EXPECT_NE(ErrorOf(ParseInstantVector(
                        R"({"status":"success","data":{"resultType":"matrix","result":[]}})")
                        .status())
                .find("not an instant vector"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseInstantVector(R"({"status":"success","data":{"resultType":"vector",
                "result":[{"metric":{},"value":[1,2]}]}})")
                        .status())
                .find("data.result[].value[1]: expected a string"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseInstantVector(R"({"status":"success","data":{"resultType":"vector",
                "result":[{"metric":{},"value":[1]}]}})")
                        .status())
                .find("data.result[].value: expected [time, \"value\"]"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseInstantVector(R"({"status":"success","data":{"resultType":"vector",
                "result":[{"metric":{"a":"b"},"value":[1,"x"]}]}})")
                        .status())
                .find("value \"x\" of {a=\"b\"} is not a number"),
            std::string::npos);
}

TEST(DoctorReportTest, ReadsFindings) {
  absl::StatusOr<std::vector<DoctorFinding>> findings = ReadDoctorReport(
      R"({"findings":[{"layer":"container","id":"container.visible-devices","status":"fail",
          "summary":"no GPU","evidence":"NVIDIA_VISIBLE_DEVICES=void","fix":"x"}],
          "summary":{"ok":0,"warn":0,"fail":1,"skip":0}})",
      "log");
  ASSERT_TRUE(findings.ok()) << findings.status();
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ((*findings)[0].id, "container.visible-devices");
  EXPECT_EQ((*findings)[0].status, "fail");
  EXPECT_EQ((*findings)[0].summary, "no GPU");
  EXPECT_EQ((*findings)[0].evidence, "NVIDIA_VISIBLE_DEVICES=void");
}

TEST(DoctorReportTest, RefusesWhatIsNotAReport) {
  EXPECT_EQ(ErrorOf(ReadDoctorReport(R"({"summary":{}})", "log").status()),
            "log: no findings; expected the report `gpunode doctor -o json` prints");
  EXPECT_NE(ErrorOf(ReadDoctorReport(R"({"findings":[{"id":1}]})", "log").status())
                .find("log: doctor report object: findings[].id: expected a string"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ReadDoctorReport("all good\n", "log").status()).find("log: "),
            std::string::npos);
}

}  // namespace
}  // namespace gpunode::cluster
