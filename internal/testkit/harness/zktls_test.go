package harness

import (
	"crypto/tls"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestStartZKTLS: the plain port still answers ruok, and the TLS port
// presents the server's certificate to a client that trusts the CA and
// speaks ZooKeeper inside TLS (ruok answered imok); one that trusts another
// CA fails its handshake.
func TestStartZKTLS(t *testing.T) {
	ca := NewCA(t, "")
	z := StartZKTLS(t, ca.Issue(t, "server", "localhost", Loopback), ca, false)
	if err := ruok(z.Servers()[0]); err != nil {
		t.Fatalf("plain port: %v", err)
	}
	secure := z.TLSServers()
	if len(secure) != 1 || secure[0] == z.Servers()[0] {
		t.Fatalf("TLSServers() = %v beside Servers() = %v", secure, z.Servers())
	}

	reply, err := tlsFourLetterWord(secure[0], ca.ClientConfig(nil), "ruok")
	if err != nil || reply != "imok" {
		t.Fatalf("ruok over TLS: %q, %v", reply, err)
	}
	other := NewCA(t, "other CA")
	if _, err := tlsFourLetterWord(secure[0], other.ClientConfig(nil), "ruok"); err == nil ||
		!strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a client trusting another CA: %v", err)
	}
}

// TestStartZKTLSWith: a TLS 1.3 port that needs a client certificate
// refuses TLS 1.2, serves a TLS 1.3 client with a certificate from the CA,
// and refuses one without a certificate after the client's handshake has
// returned: on its first read.
func TestStartZKTLSWith(t *testing.T) {
	ca := NewCA(t, "")
	z := StartZKTLSWith(t, ZKTLSOptions{
		Server: ca.Issue(t, "server", Loopback), CA: ca, NeedClientCert: true, TLS13Only: true,
	})
	addr := z.TLSServers()[0]

	tls12 := ca.ClientConfig(ca.Issue(t, "client", "alice"))
	tls12.MaxVersion = tls.VersionTLS12
	if _, err := tlsFourLetterWord(addr, tls12, "ruok"); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.2 client: %v", err)
	}

	withCert := ca.ClientConfig(ca.Issue(t, "client", "alice"))
	c, err := tls.Dial("tcp", addr, withCert)
	if err != nil {
		t.Fatalf("TLS 1.3 with a client certificate: %v", err)
	}
	if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("version %#x, want TLS 1.3", v)
	}
	c.Close()
	if reply, err := tlsFourLetterWord(addr, withCert, "ruok"); err != nil || reply != "imok" {
		t.Fatalf("ruok over TLS 1.3: %q, %v", reply, err)
	}

	c, err = tls.Dial("tcp", addr, ca.ClientConfig(nil))
	if err != nil {
		t.Fatalf("TLS 1.3 without a client certificate: the client's handshake returns before the refusal: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "ruok"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err == nil || !strings.Contains(err.Error(), "remote error: tls: ") {
		t.Fatalf("the first read without a client certificate: %v, want the server's alert", err)
	}
}

// A TLS port needs a server the harness starts: ZK_SERVERS, which names
// servers of someone else's configuration, is not used.
func TestStartZKTLSBesideZKServers(t *testing.T) {
	t.Setenv("ZK_SERVERS", "127.0.0.1:1")
	ca := NewCA(t, "")
	z := StartZKTLS(t, ca.Issue(t, "server", Loopback), ca, false)
	if z.External() || z.Servers()[0] == "127.0.0.1:1" {
		t.Fatalf("the servers of ZK_SERVERS: %v", z.Servers())
	}
	if reply, err := tlsFourLetterWord(z.TLSServers()[0], ca.ClientConfig(nil), "ruok"); err != nil || reply != "imok" {
		t.Fatalf("ruok over TLS: %q, %v", reply, err)
	}
}

func TestStartZKTLSOptionsChecked(t *testing.T) {
	if _, err := LaunchZKTLSWith(ZKTLSOptions{}); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("no certificate, no CA: %v", err)
	}
}

// A TLSFront carries ZooKeeper's plain port inside TLS, verified as its
// certificate's names, and Close ends its connections (the package's
// TestMain checks for leaked goroutines).
func TestTLSFront(t *testing.T) {
	z := StartZK(t, 1)
	ca := NewCA(t, "")
	f, err := LaunchTLSFront(z.Servers()[0], ca.Issue(t, "front", Loopback))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if reply, err := tlsFourLetterWord(f.Addr(), ca.ClientConfig(nil), "ruok"); err != nil || reply != "imok" {
		t.Fatalf("ruok through the front: %q, %v", reply, err)
	}
	idle, err := tls.Dial("tcp", f.Addr(), ca.ClientConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection outlived Close")
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
}
