package ttl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
)

// BadCertificate reports whether err is a TLS handshake that failed in a
// way that trying again meets the same way: the client refused the
// server's certificate (issued by an authority it does not trust, for
// another name, expired), the server refused the client's handshake (a
// TLS alert: it wants a client certificate, or refuses ours), or the
// server does not speak TLS. Backends mark such errors ErrPermanent, so
// that Acquire returns them at once rather than its context's error.
func BadCertificate(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		op        *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &record) ||
		(errors.As(err, &op) && op.Op == "remote error") // crypto/tls's wrapping of an alert it received
}
