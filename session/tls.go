package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// WithTLS makes the client speak TLS, configured by cfg, to every server:
// the servers listed are their secure client ports (ZooKeeper's
// secureClientPort, served by its Netty connection factory). Default: plain
// TCP.
//
// Each server's certificate is verified against cfg.RootCAs (the system's
// roots when nil) and, when cfg.ServerName is empty, against the host that
// the server list names, though the client dials the addresses it resolves
// to: "zk1.example.com:2281" is verified as zk1.example.com,
// "10.0.0.5:2281" as the IP address 10.0.0.5, each address as the entry it
// was resolved from, also when two entries resolve to the same address.
// Set cfg.ServerName to verify every server as that one name.
// cfg.Certificates are presented to servers that require a client
// certificate (ssl.clientAuth=need). A zero cfg.MinVersion means TLS 1.2.
// cfg is copied when WithTLS is called: later changes to it are not seen.
//
// A failed TLS handshake (an untrusted certificate, another host name, a
// refused client certificate) fails the connection attempt as a refused
// connection does: the next server is tried, and the attempt is reported
// to the Connect hook of WithTrace. Connect gives up at once when every
// server refused the client in one round (see Connect): its error is
// recipes.ErrRefused and names each, e.g. "...: every server refused the
// client: 127.0.0.1:2281: tls handshake: tls: failed to verify
// certificate: x509: certificate signed by unknown authority" (errors.As
// finds the *tls.CertificateVerificationError). When it gives up
// otherwise, its ErrNotConnected error names the most telling failure
// since the last connection (a TLS failure before a refused connection),
// after "last attempt: ". Under TLS 1.3 a server judges the
// client's certificate after the client's handshake: its refusal (a TLS
// alert) ends the ZooKeeper handshake that follows, and is reported the
// same way. The handshake is part of the attempt's bound (see the package
// documentation on sick members). The logger hears of the first failure of
// each cause at each server at Warn, and of its repeats (one a second or
// so, for as long as it lasts) at Debug, until a connection is made.
//
// Session loss is what it is without TLS: every reconnection, to the same
// server or another, makes a new TLS handshake, and the session survives
// it, or not, as it survives any reconnection.
func WithTLS(cfg *tls.Config) Option {
	if cfg != nil {
		cfg = cfg.Clone()
		if cfg.MinVersion == 0 {
			cfg.MinVersion = tls.VersionTLS12
		}
	}
	return func(c *config) error {
		if cfg == nil {
			return invalid("WithTLS: nil tls.Config")
		}
		c.tls = cfg // shared by the clients of this Option; never changed (handshake works on a clone)
		return nil
	}
}

// target is one address of the server list: the address dialed, and the
// host the server list names it by (a certificate is verified for it).
type target struct {
	addr, host string
}

// tlsDialer makes the TLS handshakes of a client with WithTLS.
type tlsDialer struct {
	cfg *tls.Config
}

// nextTarget is the target of one zk.Conn's next dial, shared by its host
// provider (Next sets it) and its dialer (which reads it): go-zookeeper
// dials the address Next gives at once, on the goroutine that called
// Next. One per connection, so that a replaced connection winding down
// beside its successor cannot lend it its target.
type nextTarget struct{ p atomic.Pointer[target] }

// set notes that t is dialed next.
func (n *nextTarget) set(t *target) {
	if n != nil {
		n.p.Store(t)
	}
}

// hostOf is the host address is verified as: the host of the target Next
// gave for it, or address's own host.
func (n *nextTarget) hostOf(address string) string {
	if n != nil {
		if t := n.p.Load(); t != nil && t.addr == address {
			return t.host
		}
	}
	host, _, _ := net.SplitHostPort(address)
	return host
}

// newTLSDialer returns the dialer of cfg; nil when cfg is nil (plain TCP).
func newTLSDialer(cfg *tls.Config) *tlsDialer {
	if cfg == nil {
		return nil
	}
	return &tlsDialer{cfg: cfg}
}

// handshake runs the TLS handshake of a connection on raw, within raw's
// deadline, verifying the server as host unless the config names the
// server, and returns the TLS connection; on failure raw is closed.
func (d *tlsDialer) handshake(raw net.Conn, host string) (net.Conn, error) {
	cfg := d.cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		raw.Close()
		return nil, fmt.Errorf("tls handshake: %w", d.explain(err))
	}
	return tlsConn{c, raw}, nil
}

// explain adds to err, when it is a server's refusal of a client that gave
// no certificate, that the server may require one.
func (d *tlsDialer) explain(err error) error {
	if d.refusedWithoutCert(err) {
		return fmt.Errorf("%w (no client certificate was given: the server may require one)", err)
	}
	return err
}

// refusedWithoutCert reports whether err is a server's refusal of a client
// that gives no certificate: ZooKeeper with ssl.clientAuth=need answers
// with a bad_certificate alert (certificate_required in TLS 1.3, from some
// servers), which says nothing of the missing certificate.
func (d *tlsDialer) refusedWithoutCert(err error) bool {
	if len(d.cfg.Certificates) > 0 || d.cfg.GetClientCertificate != nil {
		return false
	}
	alert, ok := remoteAlert(err)
	return ok && (alert == "tls: bad certificate" || alert == "tls: certificate required")
}

// remoteAlert returns the text of the TLS alert the server sent, when err
// is one: crypto/tls reports an alert from the peer as a net.OpError
// "remote error" whose error, of an unexported type, is the alert's text.
func remoteAlert(err error) (string, bool) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" {
		return "", false
	}
	return op.Err.Error(), true
}

// tlsConn is a TLS connection whose Close closes the socket at once. The
// client closes a connection when it is done with it or no longer trusts
// it (the watchdog's drop); tls.Conn.Close would first write a
// close_notify alert, which can block the closer for seconds on a peer that
// does not read.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c tlsConn) Close() error { return c.raw.Close() }

// tlsWarnings are the TLS failures logged at Warn since the last
// connection. A failure comes back at every attempt, about once a second
// for each address, for as long as it lasts (an expired certificate: until
// it is replaced): one warning per server and cause is enough.
type tlsWarnings struct {
	mu     sync.Mutex
	warned map[string]string // server -> the cause of the warning
}

// first reports whether cause at server is new since the last connection
// (or differs from the one warned of), and notes it.
func (w *tlsWarnings) first(server, cause string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.warned[server]; ok && c == cause {
		return false
	}
	if w.warned == nil {
		w.warned = make(map[string]string)
	}
	w.warned[server] = cause
	return true
}

// reset forgets the warnings: a connection was made.
func (w *tlsWarnings) reset() {
	w.mu.Lock()
	clear(w.warned)
	w.mu.Unlock()
}

// tlsCause is what two failures must share to be the same cause: err's
// text, less what changes from one attempt to the next (the time in an
// expired certificate's error, the local port in a network error's).
func tlsCause(err error) string {
	var invalid x509.CertificateInvalidError
	var op *net.OpError
	switch {
	case errors.As(err, &invalid):
		return "x509: invalid certificate, reason " + strconv.Itoa(int(invalid.Reason))
	case errors.As(err, &op):
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

// logTLSFailure logs a failed TLS handshake with server, or a TLS alert
// that ended the ZooKeeper handshake after it: at Warn the first time of
// each cause since the last connection, at Debug when it repeats.
func (l *liveness) logTLSFailure(server string, err error) {
	if l.log == nil {
		return
	}
	level := slog.LevelDebug
	if l.tlsWarned.first(server, tlsCause(err)) {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "zookeeper TLS handshake failed; trying the next server", "server", server, "err", err)
}
