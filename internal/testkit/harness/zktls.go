package harness

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// debianNettyCodec is the Netty jar that Debian's zookeeper.jar does not
// name on its manifest's classpath and its TLS needs (Netty's SslHandler is
// a codec): without it every TLS connection fails on the server with
// NoClassDefFoundError: io/netty/handler/codec/ByteToMessageDecoder. A
// release tarball's lib/ has it.
var debianNettyCodec = "/usr/share/java/netty-codec.jar"

// StartZKTLS gives t a standalone ZooKeeper that serves both its plain
// client port (Servers, where the four-letter words are answered) and a TLS
// client port (TLSServers), both on Loopback, stopped by t.Cleanup. The TLS
// port presents server (its certificate and key) and trusts ca for client
// certificates, which it requires when needClientCert. It needs a local
// install: with ZK_SERVERS set, or none installed, t is ended by
// Unavailable.
func StartZKTLS(t testing.TB, server *Cert, ca *CA, needClientCert bool) *ZK {
	t.Helper()
	z, err := LaunchZKTLS(server, ca, needClientCert)
	if err != nil {
		skipOrFail(t, "zookeeper with TLS", err)
	}
	z.closeAtCleanup(t)
	return z
}

// LaunchZKTLS is StartZKTLS without a testing.TB: the caller must Close the
// result. The error wraps ErrUnavailable when no local install can be had.
//
// The server's zoo.cfg gets, beside the usual lines (zooCfg), those of
// zooCfgTLS: ZooKeeper 3.8 reads PEM key and trust stores, and serves TLS
// only with the Netty connection factory.
func LaunchZKTLS(server *Cert, ca *CA, needClientCert bool) (*ZK, error) {
	if os.Getenv("ZK_SERVERS") != "" {
		return nil, unavailablef("a TLS port needs a server this harness starts with its own certificates, " +
			"and ZK_SERVERS is set; unset it to have one started from a local install")
	}
	in, err := findZKInstall()
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, zkHint)
	}
	if in.logback == "" && isFile(debianNettyCodec) {
		tls := *in
		tls.classpath += string(os.PathListSeparator) + debianNettyCodec
		in = &tls
	}
	keyStore := strings.TrimSuffix(server.CertFile, ".pem") + "-keystore.pem"
	if err := writeKeyStore(keyStore, server); err != nil {
		return nil, err
	}
	z, err := launchTLSZK(in, keyStore, ca.CertFile, needClientCert)
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		// Another process took a port between FreePorts and the bind.
		z, err = launchTLSZK(in, keyStore, ca.CertFile, needClientCert)
	}
	return z, err
}

// launchTLSZK starts one member with a TLS client port on a free port.
func launchTLSZK(in *zkInstall, keyStore, trustStore string, needClientCert bool) (*ZK, error) {
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	ensemble := []zkPorts{{client: ports[0], peer: ports[1], election: ports[2]}}
	cfg := zooCfgTLS(ports[3], keyStore, trustStore, needClientCert)
	z, err := startLocalZKWith(in, ensemble, func(int) []zkPorts { return ensemble }, func(int) string { return cfg })
	if err != nil {
		return nil, err
	}
	z.secure = []string{hostPort(ports[3])}
	return z, nil
}

// zooCfgTLS renders the zoo.cfg lines of a TLS client port. Keys ZooKeeper
// does not know as its own (serverCnxnFactory, ssl.*) become system
// properties "zookeeper.<key>", which is where the server reads them.
func zooCfgTLS(port int, keyStore, trustStore string, needClientCert bool) string {
	clientAuth := "none"
	if needClientCert {
		clientAuth = "need"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "secureClientPort=%d\nsecureClientPortAddress=%s\n", port, Loopback)
	fmt.Fprintf(&b, "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	fmt.Fprintf(&b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", keyStore)
	fmt.Fprintf(&b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", trustStore)
	fmt.Fprintf(&b, "ssl.clientAuth=%s\n", clientAuth)
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
