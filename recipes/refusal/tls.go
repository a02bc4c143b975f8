package refusal

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"
)

// tlsRefusal is the rule for one error of a chain about a TLS handshake:
// the client refused the server's certificate (issued by an authority it
// does not trust, for another name, expired; not one that is not valid
// yet, which a clock put right mends), the server refused the client's
// certificate (a TLS alert about certificates: it wants one, or refuses
// ours), or the server does not speak TLS (its first record is not TLS).
// Any other alert and a malformed record after the first one are not
// refusals (see refusingAlerts).
func tlsRefusal(err error) Reason {
	var invalid x509.CertificateInvalidError
	switch e := err.(type) {
	case *tls.CertificateVerificationError:
		// The client refused the server's certificate, for the reason
		// it wraps (the walk meets that next), unless a clock's; a
		// reason of another type (no system roots, a name constraint)
		// is a certificate not valid.
		switch {
		case errors.As(e.Err, &invalid):
			return certificateInvalid(invalid)
		case knownX509(e.Err):
			return NotRefused
		}
		return Certificate
	case x509.UnknownAuthorityError:
		return Untrusted
	case x509.HostnameError:
		return Hostname
	case x509.CertificateInvalidError:
		return certificateInvalid(e)
	case tls.RecordHeaderError:
		// crypto/tls sets Conn only when the first record it reads is
		// not TLS: a plain server, at the handshake. Later (a record of
		// a wrong version, too long: a connection garbled on the way)
		// it is nil, and trying again may find a clean path.
		if e.Conn != nil {
			return NotTLS
		}
	case *net.OpError:
		// crypto/tls's wrapping of an alert it received over TCP; its
		// alert type is unexported, and its text is AlertError's.
		if e.Op == "remote error" && e.Err != nil && refusingAlerts[e.Err.Error()] {
			return ByPeer
		}
	}
	return NotRefused
}

// knownX509 reports whether err is one of the x509 errors that tlsRefusal
// judges on its own, when the walk meets it.
func knownX509(err error) bool {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	return errors.As(err, &ua) || errors.As(err, &hn)
}

// certificateInvalid is the reason of a certificate that did not verify:
// none when it is not valid yet.
func certificateInvalid(e x509.CertificateInvalidError) Reason {
	if notYetValid(e) {
		return NotRefused
	}
	return Certificate
}

// notYetValid reports whether e is a certificate that is not valid yet: a
// clock behind the issuer's (or a certificate issued a moment ago) that
// time or NTP mends, unlike an expired one.
func notYetValid(e x509.CertificateInvalidError) bool {
	return e.Reason == x509.Expired && e.Cert != nil && time.Now().Before(e.Cert.NotBefore)
}

// refusingAlerts are the texts of the TLS alerts a server sends when it
// refuses the client's certificate or its lack of one ("tls: bad
// certificate"): the same certificate meets them again.
var refusingAlerts = alertTexts(
	42,  // bad_certificate: ZooKeeper's answer to no certificate (ssl.clientAuth=need)
	43,  // unsupported_certificate
	44,  // certificate_revoked
	45,  // certificate_expired
	46,  // certificate_unknown
	48,  // unknown_ca: ours is signed by an authority it does not trust
	49,  // access_denied
	116, // certificate_required: TLS 1.3, no client certificate
)

// Every other alert is retried: it may come at any point of any
// connection, and says nothing of the next one. Among them:
//
//   - bad_record_mac (20), record_overflow (22), decode_error (50),
//     decrypt_error (51): a record or message damaged on the way;
//   - internal_error (80): the server's own trouble (a keystore being
//     reloaded; crypto/tls sends it when GetCertificate fails);
//   - handshake_failure (40), protocol_version (70),
//     insufficient_security (71): no version or cipher in common, which
//     a server's configuration being rolled out mends; and some servers
//     (OpenSSL under TLS 1.2) send handshake_failure for a missing client
//     certificate, which is then retried until the caller's deadline;
//   - close_notify (0), user_canceled (90): the peer closed.

func alertTexts(alerts ...tls.AlertError) map[string]bool {
	m := make(map[string]bool, len(alerts))
	for _, a := range alerts {
		m[a.Error()] = true
	}
	return m
}

// hidden are the errors of the rule's types that e, which hides its chain
// behind an As method, gives to errors.As.
func hidden(e interface{ As(any) bool }) []error {
	var (
		verify *tls.CertificateVerificationError
		ua     x509.UnknownAuthorityError
		hn     x509.HostnameError
		ci     x509.CertificateInvalidError
		rh     tls.RecordHeaderError
		op     *net.OpError
		state  sqlStater
		redis  redisError
	)
	var found []error
	for _, t := range []struct {
		target any
		get    func() error
	}{
		{&verify, func() error { return verify }},
		{&ua, func() error { return ua }},
		{&hn, func() error { return hn }},
		{&ci, func() error { return ci }},
		{&rh, func() error { return rh }},
		{&op, func() error { return op }},
		{&state, func() error { return state }},
		{&redis, func() error { return redis }},
	} {
		if e.As(t.target) {
			found = append(found, t.get())
		}
	}
	return found
}
