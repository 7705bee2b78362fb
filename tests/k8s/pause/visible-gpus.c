// The second program of the local node's image (scripts/local-cluster.sh node), a workload for
// tests whose pods must run to the end: prints the GPUs the container was given
// (NVIDIA_VISIBLE_DEVICES, which the device plugin's Allocate sets and the kubelet passes on) and
// exits 0 when there are exactly as many as its argument, 1 otherwise.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: visible-gpus COUNT\n");
    return 2;
  }
  const char* devices = getenv("NVIDIA_VISIBLE_DEVICES");
  if (devices == NULL || *devices == '\0') {
    printf("NVIDIA_VISIBLE_DEVICES is not set\n");
    return 1;
  }
  long count = 1;
  for (const char* c = devices; *c != '\0'; ++c) count += *c == ',';
  printf("NVIDIA_VISIBLE_DEVICES=%s (%ld GPU(s))\n", devices, count);
  return count == strtol(argv[1], NULL, 10) ? 0 : 1;
}
