package session_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleTLS starts a ZooKeeper with a TLS client port, whose certificate
// (for 127.0.0.1) a CA of its own signed, and returns its TLS addresses,
// the CA's certificate file and a function that stops it; in your code
// these are your ensemble's secure client ports and your CA. Without a
// local install to start one from (the other examples' server then comes
// from ZK_SERVERS or a container), the TLS port is a TLS front before the
// other examples' server. It panics when no server can be had, as
// exampleServers does.
func exampleTLS() (servers []string, caFile string, stop func()) {
	dir, err := os.MkdirTemp("", "zkr-example-tls-")
	if err != nil {
		panic(err)
	}
	ca, err := harness.NewCAIn(dir, "")
	if err != nil {
		panic(err)
	}
	cert, err := ca.IssueErr("server", harness.Loopback)
	if err != nil {
		panic(err)
	}
	z, err := harness.LaunchZKTLS(cert, ca, false)
	if errors.Is(err, harness.ErrUnavailable) {
		front, err := harness.LaunchTLSFront(exampleServers()[0], cert)
		if err != nil {
			panic(err)
		}
		return []string{front.Addr()}, ca.CertFile, func() {
			_ = front.Close()
			_ = os.RemoveAll(dir)
		}
	}
	if err != nil {
		panic(err)
	}
	return z.TLSServers(), ca.CertFile, func() {
		_ = z.Close()
		_ = os.RemoveAll(dir)
	}
}

func ExampleWithTLS() {
	servers, caFile, stop := exampleTLS()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Trust the CA that signed the servers' certificates. For servers that
	// require a client certificate (ssl.clientAuth=need), set Certificates
	// too.
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fmt.Println("no certificate in", caFile)
		return
	}
	client, err := session.Connect(ctx, servers,
		session.WithTLS(&tls.Config{RootCAs: roots}), // verified as the host in servers
		session.WithLogger(nil))
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer client.Close()

	node, err := client.Create(ctx, "/example-tls-", []byte("sent over TLS"), session.Ephemeral|session.PersistentSequential)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := client.Get(ctx, node)
	fmt.Println(string(data), err)
	// Output: sent over TLS <nil>
}
