// The sandbox ("pause") container of the local node's pods (scripts/local-cluster.sh node):
// images cannot be pulled in the tests, so this stands in for registry.k8s.io/pause. It holds the
// pod's namespaces, reaps the children that end up with it, and exits on SIGINT or SIGTERM, as
// Kubernetes' own pause does.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void Quit(int signal_number) {
  (void)signal_number;
  _exit(0);
}

static void Reap(int signal_number) {
  (void)signal_number;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  signal(SIGINT, Quit);
  signal(SIGTERM, Quit);
  signal(SIGCHLD, Reap);
  for (;;) pause();
}
