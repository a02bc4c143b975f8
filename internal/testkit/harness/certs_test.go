package harness

import (
	"crypto/tls"
	"strings"
	"testing"
)

// TestCertsHandshake: a client trusting the CA completes a handshake with a
// server certificate issued for 127.0.0.1, presenting its own client
// certificate; one trusting another CA, or asking for another name, fails.
func TestCertsHandshake(t *testing.T) {
	ca := NewCA(t, "")
	server := ca.Issue(t, "server", "localhost", Loopback)
	client := ca.Issue(t, "client", "alice")
	ln, err := tls.Listen("tcp", Loopback+":0", &tls.Config{
		Certificates: []tls.Certificate{server.Pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	dial := func(cfg *tls.Config) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(ca.ClientConfig(client)); err != nil {
		t.Fatalf("trusted: %v", err)
	}
	other := NewCA(t, "other CA")
	if err := dial(other.ClientConfig(client)); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("untrusted CA: %v", err)
	}
	wrongName := ca.ClientConfig(client)
	wrongName.ServerName = "elsewhere"
	if err := dial(wrongName); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("wrong name: %v", err)
	}
}
