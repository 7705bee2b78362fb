// Feeds arbitrary bytes to the kubeconfig parser, alone and merged with a valid file: yaml-cpp's
// exceptions must all become Status errors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::kube;
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)ParseKubeconfig({{"/fuzz/config", text}}, "");
  (void)ParseKubeconfig({{"/fuzz/config", text}}, "fuzz");
  static const std::string kValid =
      "clusters:\n- name: c\n  cluster: {server: \"https://k:6443\"}\n"
      "users:\n- name: u\n  user: {token: t}\n"
      "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  (void)ParseKubeconfig({{"/fuzz/config", text}, {"/fuzz/valid", kValid}}, "");
  return 0;
}
