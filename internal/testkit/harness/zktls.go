package harness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// debianNettyCodec is the Netty jar that Debian's zookeeper.jar does not
// name on its manifest's classpath and its TLS needs (Netty's SslHandler is
// a codec): without it every TLS connection fails on the server with
// NoClassDefFoundError: io/netty/handler/codec/ByteToMessageDecoder. A
// release tarball's lib/ has it.
var debianNettyCodec = "/usr/share/java/netty-codec.jar"

// ZKTLSOptions configures the TLS client port of StartZKTLSWith.
type ZKTLSOptions struct {
	Server *Cert // the certificate (and key) the TLS port presents; required
	CA     *CA   // trusted for client certificates; required

	// NeedClientCert: the port refuses a client without a certificate
	// from CA (ssl.clientAuth=need); otherwise it asks for none
	// (ssl.clientAuth=none).
	NeedClientCert bool

	// TLS13Only: the port speaks TLS 1.3 alone (ssl.protocol and
	// ssl.enabledProtocols TLSv1.3, with its AES-GCM suites); otherwise
	// ZooKeeper 3.8's default, TLS 1.2 alone. Under TLS 1.3 the server
	// judges a client's certificate after the client's handshake has
	// returned: a refusal comes on the client's first read.
	TLS13Only bool
}

// check reports options that cannot start a server.
func (o ZKTLSOptions) check() error {
	if o.Server == nil || o.CA == nil {
		return errors.New("harness: ZKTLSOptions needs Server and CA")
	}
	return nil
}

// StartZKTLS gives t a standalone ZooKeeper that serves both its plain
// client port (Servers, where the four-letter words are answered) and a TLS
// client port (TLSServers), both on Loopback, stopped by t.Cleanup. The TLS
// port presents server (its certificate and key) and trusts ca for client
// certificates, which it requires when needClientCert. It is
// StartZKTLSWith(t, ZKTLSOptions{Server: server, CA: ca, NeedClientCert:
// needClientCert}).
func StartZKTLS(t testing.TB, server *Cert, ca *CA, needClientCert bool) *ZK {
	t.Helper()
	return StartZKTLSWith(t, ZKTLSOptions{Server: server, CA: ca, NeedClientCert: needClientCert})
}

// StartZKTLSWith is StartZKTLS configured by o. The server is always one
// this harness starts from a local install, ZK_SERVERS or not (a TLS port
// needs the harness's own certificates and zoo.cfg, as StartRedisSecure
// needs its own redis-server); with none installed, t is ended by
// Unavailable. It returns once the TLS port has completed a TLS handshake
// (and answered ruok through it), so a test's first handshake does not meet
// a server still warming up its TLS.
func StartZKTLSWith(t testing.TB, o ZKTLSOptions) *ZK {
	t.Helper()
	z, err := LaunchZKTLSWith(o)
	if err != nil {
		skipOrFail(t, "zookeeper with TLS", err)
	}
	z.closeAtCleanup(t)
	return z
}

// LaunchZKTLS is StartZKTLS without a testing.TB: the caller must Close the
// result. The error wraps ErrUnavailable when no local install can be had.
func LaunchZKTLS(server *Cert, ca *CA, needClientCert bool) (*ZK, error) {
	return LaunchZKTLSWith(ZKTLSOptions{Server: server, CA: ca, NeedClientCert: needClientCert})
}

// LaunchZKTLSWith is StartZKTLSWith without a testing.TB: the caller must
// Close the result. The error wraps ErrUnavailable when no local install
// can be had; ZK_SERVERS is not used.
//
// The server's zoo.cfg gets, beside the usual lines (zooCfg), those of
// zooCfgTLS: ZooKeeper 3.8 reads PEM key and trust stores, and serves TLS
// only with the Netty connection factory.
func LaunchZKTLSWith(o ZKTLSOptions) (*ZK, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	in, err := findZKInstall()
	if err != nil {
		return nil, fmt.Errorf("%w; a TLS port needs a server this harness starts with its own certificates "+
			"(ZK_SERVERS is not used): install zookeeper (Debian/Ubuntu: apt-get install zookeeper "+
			"default-jre-headless), or unpack a release and set ZOOKEEPER_HOME", err)
	}
	if in.logback == "" && isFile(debianNettyCodec) {
		tls := *in
		tls.classpath += string(os.PathListSeparator) + debianNettyCodec
		in = &tls
	}
	keyStore := strings.TrimSuffix(o.Server.CertFile, ".pem") + "-keystore.pem"
	if err := writeKeyStore(keyStore, o.Server); err != nil {
		return nil, err
	}
	// The readiness probe's client certificate, for a port that needs one.
	probe, err := o.CA.IssueErr("harness-probe", "harness-probe")
	if err != nil {
		return nil, err
	}
	z, err := launchTLSZK(in, keyStore, o, probe)
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		// Another process took a port between FreePorts and the bind.
		z, err = launchTLSZK(in, keyStore, o, probe)
	}
	return z, err
}

// launchTLSZK starts one member with a TLS client port on a free port, and
// waits until that port serves over TLS.
func launchTLSZK(in *zkInstall, keyStore string, o ZKTLSOptions, probe *Cert) (*ZK, error) {
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	ensemble := []zkPorts{{client: ports[0], peer: ports[1], election: ports[2]}}
	cfg := zooCfgTLS(ports[3], keyStore, o)
	z, err := startLocalZKWith(in, ensemble, func(int) []zkPorts { return ensemble }, func(int) string { return cfg })
	if err != nil {
		return nil, err
	}
	z.secure = []string{hostPort(ports[3])}
	if err := z.waitTLSReady(probe); err != nil {
		z.Close()
		return nil, err
	}
	return z, nil
}

// waitTLSReady waits (bounded) until every TLS port completes a handshake
// and answers ruok with imok through it. The probe checks that the port
// serves, not who it is (tests may give the server a certificate they mean
// clients to refuse); it presents probe, for a port that needs a client
// certificate.
func (z *ZK) waitTLSReady(probe *Cert) error {
	cfg := &tls.Config{
		InsecureSkipVerify: true, // a liveness probe, see above
		Certificates:       []tls.Certificate{probe.Pair},
		MinVersion:         tls.VersionTLS12,
	}
	for i, addr := range z.secure {
		var p *process
		if m := z.members[i]; m.ctl != nil {
			p = m.ctl.watched()
		}
		err := waitFor(p, "zookeeper TLS port "+addr+" serving", zkReadyTimeout, 100*time.Millisecond, func() error {
			reply, err := tlsFourLetterWord(addr, cfg, "ruok")
			if err == nil && reply != "imok" {
				err = fmt.Errorf("ruok over TLS to %s: %q", addr, reply)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tlsFourLetterWord sends cmd over TLS to addr and reads the reply until
// the server closes the connection, all within fourLetterTimeout.
func tlsFourLetterWord(addr string, cfg *tls.Config, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fourLetterTimeout)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	if err := c.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(c)
	if len(reply) > 0 {
		err = nil // closed by the server, with or without close_notify: the whole reply
	}
	return string(reply), err
}

// zooCfgTLS renders the zoo.cfg lines of a TLS client port. Keys ZooKeeper
// does not know as its own (serverCnxnFactory, ssl.*) become system
// properties "zookeeper.<key>", which is where the server reads them.
func zooCfgTLS(port int, keyStore string, o ZKTLSOptions) string {
	clientAuth := "none"
	if o.NeedClientCert {
		clientAuth = "need"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "secureClientPort=%d\nsecureClientPortAddress=%s\n", port, Loopback)
	fmt.Fprintf(&b, "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	fmt.Fprintf(&b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", keyStore)
	fmt.Fprintf(&b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", o.CA.CertFile)
	fmt.Fprintf(&b, "ssl.clientAuth=%s\n", clientAuth)
	if o.TLS13Only {
		fmt.Fprintf(&b, "ssl.protocol=TLSv1.3\nssl.enabledProtocols=TLSv1.3\n")
		fmt.Fprintf(&b, "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384\n")
	}
	return b.String()
}

// writeKeyStore writes the PEM key store ZooKeeper reads: the certificate,
// then its PKCS#8 key, in one file.
func writeKeyStore(path string, c *Cert) error {
	cert, certErr := os.ReadFile(c.CertFile)
	key, keyErr := os.ReadFile(c.KeyFile)
	if err := errors.Join(certErr, keyErr); err != nil {
		return fmt.Errorf("harness: key store: %w", err)
	}
	if err := os.WriteFile(path, append(cert, key...), 0o600); err != nil {
		return fmt.Errorf("harness: key store: %w", err)
	}
	return nil
}

// TLSServers returns the TLS client address ("127.0.0.1:port") of every
// member of a ZK from StartZKTLS, in member order; nil for any other ZK.
func (z *ZK) TLSServers() []string { return append([]string(nil), z.secure...) }

// TLSFront is a TLS port before a server that has none: it accepts TLS
// connections on Loopback, presenting a certificate, and carries what they
// carry, in the clear, to the upstream server. It is how an Example shows
// a TLS client when LaunchZKTLS cannot start a server (no local install:
// the Example's ZooKeeper comes from ZK_SERVERS or a container). Tests use
// StartZKTLS, whose TLS is ZooKeeper's own.
type TLSFront struct {
	ln       net.Listener // TLS
	upstream string
	wg       sync.WaitGroup // the accept loop and every connection's

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open, both sides, closed by Close
	closed bool
}

// frontDialTimeout bounds a TLSFront's dial of its upstream.
const frontDialTimeout = 5 * time.Second

// LaunchTLSFront starts a TLSFront to upstream on a free port, presenting
// server (TLS 1.2 or later, no client certificate asked for). The caller
// must Close it.
func LaunchTLSFront(upstream string, server *Cert) (*TLSFront, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("harness: TLS front: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{server.Pair}, MinVersion: tls.VersionTLS12}
	f := &TLSFront{ln: tls.NewListener(ln, cfg), upstream: upstream, conns: make(map[net.Conn]struct{})}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the front's TLS address, "127.0.0.1:port".
func (f *TLSFront) Addr() string { return f.ln.Addr().String() }

// Close stops the front, closing every connection, and waits for its
// goroutines to end. It may be called more than once.
func (f *TLSFront) Close() error {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		f.ln.Close()
		for c := range f.conns {
			c.Close()
		}
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// accept serves each connection until the listener is closed.
func (f *TLSFront) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: try again shortly
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !f.track(c) {
			return
		}
		f.wg.Add(1)
		go f.serve(c)
	}
}

// track adds c to the connections Close closes; false, with c closed,
// when the front is closed.
func (f *TLSFront) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// forget closes c and drops it from the connections.
func (f *TLSFront) forget(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// serve dials the upstream for client and copies both ways until either
// side ends, then closes both.
func (f *TLSFront) serve(client net.Conn) {
	defer f.wg.Done()
	defer f.forget(client)
	up, err := net.DialTimeout("tcp", f.upstream, frontDialTimeout)
	if err != nil || !f.track(up) {
		return
	}
	defer f.forget(up)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(up, client)
		up.Close()
		client.Close()
	}()
	_, _ = io.Copy(client, up)
	client.Close()
	up.Close()
	<-copied
}
