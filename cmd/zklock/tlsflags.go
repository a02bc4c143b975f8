package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
)

// tlsOptions are --tls-ca, --tls-cert and --tls-key, for ZooKeeper and
// Redis. They name files: a secret (the key) is never on the command line.
type tlsOptions struct {
	ca, cert, key string

	roots *x509.CertPool    // --tls-ca loaded by validate; nil: the system's
	pair  []tls.Certificate // --tls-cert and --tls-key loaded by validate
}

func (o *tlsOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.ca, "tls-ca", "", "TLS: trust only the CA certificates (PEM) in FILE")
	fs.StringVar(&o.cert, "tls-cert", "", "TLS: the client certificate (PEM) in FILE, for servers that ask for one (with --tls-key)")
	fs.StringVar(&o.key, "tls-key", "", "TLS: the client certificate's private key (PEM) in FILE")
}

// given reports whether any of the flags was given: ZooKeeper is then
// reached over TLS.
func (o *tlsOptions) given() bool { return o.ca != "" || o.cert != "" || o.key != "" }

// validate loads the files; an error is a usage error, naming the file,
// never quoting it (a key is a secret).
func (o *tlsOptions) validate() error {
	if (o.cert == "") != (o.key == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if o.ca != "" {
		pem, err := os.ReadFile(o.ca)
		if err != nil {
			return fmt.Errorf("--tls-ca: %v", err)
		}
		o.roots = x509.NewCertPool()
		if !o.roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.ca)
		}
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			// crypto/tls's messages name the problem, not the key's bytes.
			return fmt.Errorf("--tls-cert %s, --tls-key %s: %v", o.cert, o.key, err)
		}
		o.pair = []tls.Certificate{pair}
	}
	return nil
}

// config is the TLS client configuration the flags say: the --tls-ca
// roots (else the system's), the client certificate if any. ServerName
// is left to the dialer: each connection checks the certificate against
// the host it dials.
func (o *tlsOptions) config() *tls.Config {
	return &tls.Config{RootCAs: o.roots, Certificates: o.pair, MinVersion: tls.VersionTLS12}
}
