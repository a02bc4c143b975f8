package ttl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"
)

// BadCertificate reports whether err is a TLS handshake that failed in a
// way that trying again meets the same way: the client refused the
// server's certificate (issued by an authority it does not trust, for
// another name, expired; not one that is not valid yet, which a clock
// put right mends), the server refused the client's certificate (a TLS
// alert about certificates: it wants one, or refuses ours), or the server
// does not speak TLS (its first record is not TLS). Any other alert
// (internal_error, bad_record_mac, decode_error) and a malformed record
// after the first one are not: they may come at any point of a
// connection, and say nothing of the next. It looks through the whole
// chain of err: a dialer may wrap the handshake's error in an error of
// its own (a *net.OpError "dial" around crypto/tls's "remote error").
// Backends mark such errors Refused: an acquisition returns them at once,
// a renewal tries again until its lease's deadline.
func BadCertificate(err error) bool {
	return inChain(err, func(err error) bool {
		var invalid x509.CertificateInvalidError
		switch e := err.(type) {
		case *tls.CertificateVerificationError:
			// The client refused the server's certificate: for the
			// reason it wraps, unless that is a clock's.
			return !errors.As(e.Err, &invalid) || !notYetValid(invalid)
		case x509.UnknownAuthorityError, x509.HostnameError:
			return true
		case x509.CertificateInvalidError:
			return !notYetValid(e)
		case tls.RecordHeaderError:
			// crypto/tls sets Conn only when the first record it reads
			// is not TLS: a plain server, at the handshake. Later (a
			// record of a wrong version, too long) it is nil.
			return e.Conn != nil
		case *net.OpError:
			// crypto/tls's wrapping of an alert it received over TCP.
			return e.Op == "remote error" && e.Err != nil && certificateAlerts[e.Err.Error()]
		}
		return false
	})
}

// certificateAlerts are the texts of the TLS alerts that refuse a
// certificate, as crypto/tls writes them ("tls: bad certificate"): its
// alert type is unexported; AlertError's text is the same.
var certificateAlerts = func() map[string]bool {
	m := map[string]bool{}
	for _, a := range []tls.AlertError{
		42,  // bad_certificate
		43,  // unsupported_certificate
		44,  // certificate_revoked
		45,  // certificate_expired
		46,  // certificate_unknown
		48,  // unknown_ca
		49,  // access_denied
		116, // certificate_required (TLS 1.3: no client certificate)
	} {
		m[a.Error()] = true
	}
	return m
}()

// notYetValid reports whether e is a certificate that is not valid yet: a
// clock behind the issuer's (or a certificate issued a moment ago) that
// time or NTP mends, unlike an expired one.
func notYetValid(e x509.CertificateInvalidError) bool {
	return e.Reason == x509.Expired && e.Cert != nil && time.Now().Before(e.Cert.NotBefore)
}

// inChain reports whether f holds for err or an error it wraps, through
// every branch (Unwrap() error and Unwrap() []error, and Transient's
// wrapping), as errors.As searches but without stopping at the first
// error of a type.
func inChain(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case transientError:
			err = u.err
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if inChain(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
