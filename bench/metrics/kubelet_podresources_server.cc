// A kubelet's PodResources API for bench/metrics/measure_exporter.sh, so the exporter is measured
// with pod attribution on, as deployed: the tests' kubelet double (a gRPC C++ server) on SOCKET,
// answering List with one pod per device ID given, until SIGTERM or SIGINT.
//   kubelet_podresources_server SOCKET DEVICE_ID...
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kubelet_podresources_double.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SOCKET DEVICE_ID...\n", argv[0]);
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  // Blocked before the server's threads start, so only sigwait below receives them.
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::vector<gpunode::testing::FakePod> pods;
  for (int i = 2; i < argc; ++i) {
    const std::string n = std::to_string(i - 2);
    pods.push_back({"bench", "train-" + n, {{"trainer", {{"nvidia.com/gpu", {argv[i]}}}}}});
  }
  gpunode::testing::KubeletPodResourcesDouble kubelet(argv[1]);
  kubelet.SetPods(std::move(pods));
  std::printf("serving %d pods on %s\n", argc - 2, argv[1]);
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}
