// An HTTPS server on Go's crypto/tls and net/http with the Kubernetes API server's TLS defaults
// (TLS 1.2 and 1.3, Go's default cipher suites and curves, h2 and http/1.1 offered by ALPN), for
// the node daemons' TLS tests (tests/cluster/tls_client_test.cc). It answers every request with
// an empty NodeList and prints its port on stdout once it listens.
//
// Usage: go_tls_server CERT KEY [tls13-only]
package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go_tls_server CERT KEY [tls13-only]")
		os.Exit(2)
	}
	certificate, err := tls.LoadX509KeyPair(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config := &tls.Config{
		Certificates: []tls.Certificate{certificate},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}
	// As an API server started with --tls-min-version=VersionTLS13.
	if len(os.Args) > 3 && os.Args[3] == "tls13-only" {
		config.MinVersion = tls.VersionTLS13
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","items":[]}`)
	})
	if err := http.Serve(listener, handler); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
