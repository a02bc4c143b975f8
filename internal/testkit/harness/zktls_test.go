package harness

import (
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"
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

	reply, err := tlsExchange(secure[0], ca.ClientConfig(nil), "ruok")
	if err != nil || reply != "imok" {
		t.Fatalf("ruok over TLS: %q, %v", reply, err)
	}
	other := NewCA(t, "other CA")
	if _, err := tlsExchange(secure[0], other.ClientConfig(nil), "ruok"); err == nil ||
		!strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a client trusting another CA: %v", err)
	}
}

// tlsExchange sends cmd over TLS to addr and reads the reply until the
// server closes the connection (bounded).
func tlsExchange(addr string, cfg *tls.Config, cmd string) (string, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(fourLetterTimeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	return string(reply), err
}
