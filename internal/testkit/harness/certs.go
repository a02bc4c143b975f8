package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: its certificate is in
// CertFile (PEM), and it issues server and client certificates. Nothing
// outside the test trusts it.
type CA struct {
	CertFile string // PEM
	Pool     *x509.CertPool

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// Cert is a certificate issued by a CA, with its key: CertFile and KeyFile
// (PEM, the key unencrypted PKCS#8), and the pair loaded for crypto/tls.
type Cert struct {
	CertFile, KeyFile string
	Pair              tls.Certificate
}

// NewCA makes a CA named name ("test CA" when empty) in a temp dir of t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewCAIn(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// NewCAIn is NewCA for callers without a testing.TB (an Example's server):
// the CA and the certificates it issues are written to dir, which the
// caller removes.
func NewCAIn(dir, name string) (*CA, error) {
	if name == "" {
		name = "test CA"
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"zkrecipes tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("harness: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("harness: CA certificate: %w", err)
	}
	ca := &CA{cert: cert, key: key, dir: dir, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	ca.CertFile = filepath.Join(ca.dir, "ca.pem")
	if err := writePEM(ca.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return ca, nil
}

// Issue makes a certificate for names (DNS names or IP addresses; the first
// is also its common name), good for both server and client use, and
// writes it and its key to files named after file ("server" makes
// server.pem and server.key).
func (ca *CA) Issue(t testing.TB, file string, names ...string) *Cert {
	t.Helper()
	c, err := ca.IssueErr(file, names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// IssueErr is Issue for callers without a testing.TB.
func (ca *CA) IssueErr(file string, names ...string) (*Cert, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("harness: Issue %s: no names", file)
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: names[0], Organization: []string{"zkrecipes tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("harness: certificate %s: %w", file, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("harness: key %s: %w", file, err)
	}
	c := &Cert{
		CertFile: filepath.Join(ca.dir, file+".pem"),
		KeyFile:  filepath.Join(ca.dir, file+".key"),
	}
	if err := writePEM(c.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writePEM(c.KeyFile, "PRIVATE KEY", keyDER); err != nil {
		return nil, err
	}
	if c.Pair, err = tls.LoadX509KeyPair(c.CertFile, c.KeyFile); err != nil {
		return nil, fmt.Errorf("harness: load %s: %w", file, err)
	}
	return c, nil
}

// ClientConfig is a TLS client configuration that trusts ca alone, with
// client certificate cert when it is not nil.
func (ca *CA) ClientConfig(cert *Cert) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.Pair}
	}
	return cfg
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("harness: key: %w", err)
	}
	return key, nil
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("harness: serial: %w", err)
	}
	return n, nil
}

func writePEM(path, kind string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}
