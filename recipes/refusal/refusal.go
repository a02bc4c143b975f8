// Package refusal is the module's one rule for "the server refused the
// client": an answer that the same request, with the same credentials and
// certificates, meets again (a password refused, a permission refused by
// an ACL, a TLS certificate refused either way, a plain server spoken to
// in TLS). Every backend marks such an error with Mark (or As, for an
// error of its own client that the rule cannot name) so that
// errors.Is(err, recipes.ErrRefused) holds, and zklock exits 69 on what Of
// finds. How a backend retries a refusal is its own choice (an acquisition
// ends at it; a renewal may try again until its lease's deadline, since a
// pooled connection made earlier may still work).
//
// A user needs only errors.Is(err, recipes.ErrRefused); Of says which
// refusal it is, for a message or a hint (zklock's). A backend of one's
// own marks its errors with Mark or As.
//
// The package uses the standard library only, so that every backend can
// import it without linking another's client: it recognises a client's
// errors by the methods they have (SQLState, RedisError) and by the text
// servers write (MySQL's "Error 1045 (28000)", memcached's CLIENT_ERROR).
package refusal

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Reason is what a server refused.
type Reason int

// The reasons, for messages. NotRefused is the zero value: no refusal.
const (
	NotRefused  Reason = iota
	Auth               // the credentials (a password, a user, a pg_hba.conf rule)
	Permission         // the operation, by the user's ACL or grants
	Untrusted          // TLS: the server's certificate, not signed by a trusted authority
	Hostname           // TLS: the server's certificate, issued for another name
	Certificate        // TLS: the server's certificate, otherwise not valid (expired)
	ByPeer             // TLS: the server refused the client's certificate, or its lack of one
	NotTLS             // TLS: the server does not speak TLS
)

// String is how zklock names the reason in its messages.
func (r Reason) String() string {
	switch r {
	case Auth:
		return "authentication refused"
	case Permission:
		return "permission refused by the server's ACL"
	case Untrusted:
		return "TLS: certificate not trusted"
	case Hostname:
		return "TLS: certificate not valid for the host name"
	case Certificate:
		return "TLS: certificate not valid"
	case ByPeer:
		return "TLS: the server refused the connection"
	case NotTLS:
		return "TLS: the server does not speak TLS"
	}
	return "not refused"
}

// TLS reports whether r is a TLS handshake's refusal.
func (r Reason) TLS() bool { return r >= Untrusted }

// Error is a refusal, marked: errors.Is(err, recipes.ErrRefused) holds,
// and its text is the server's, unchanged.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Is makes the error recipes.ErrRefused.
func (e *Error) Is(target error) bool { return target == recipes.ErrRefused }

// Of reports what err refuses, and the error that says so (for a message:
// the server's answer, without what wraps it), looking through the whole
// chain of err: first for an error marked by Mark or As, then by the
// rule. It is NotRefused and nil when err is no refusal.
func Of(err error) (Reason, error) {
	var marked *Error
	if errors.As(err, &marked) {
		if r, cause := classify(marked.Err); r != NotRefused {
			return marked.Reason, cause
		}
		return marked.Reason, marked.Err
	}
	return classify(err)
}

// Is reports whether err is a refusal: marked, or one the rule finds.
func Is(err error) bool {
	r, _ := Of(err)
	return r != NotRefused
}

// Mark returns err marked as the refusal it is (errors.Is(err,
// recipes.ErrRefused) then holds), or err itself when it is none or is
// marked already (nil stays nil). Its text is err's.
func Mark(err error) error {
	if err == nil || errors.Is(err, recipes.ErrRefused) {
		return err
	}
	if r, _ := classify(err); r != NotRefused {
		return &Error{Reason: r, Err: err}
	}
	return err
}

// As marks err as a refusal for reason r (nil stays nil): for an error of
// a backend's own client that the rule cannot name without linking it
// (go-zookeeper's zk.ErrNoAuth).
func As(err error, r Reason) error {
	if err == nil || r == NotRefused || errors.Is(err, recipes.ErrRefused) {
		return err
	}
	return &Error{Reason: r, Err: err}
}

// classify applies the rule to every error of err's chain, outermost
// first, and returns the first refusal found.
func classify(err error) (Reason, error) {
	var r Reason
	var cause error
	walk(err, func(e error) bool {
		if r = tlsRefusal(e); r == NotRefused {
			r = serverRefusal(e)
		}
		if r != NotRefused {
			cause = e
			return true
		}
		return false
	})
	return r, cause
}

// walk calls f on err and each error it wraps, through every branch
// (Unwrap() error and Unwrap() []error), until f returns true. An error
// that hides what it wraps behind an As method (compat's Transient mark)
// is asked for the standard types the rule knows (errors.As through it).
func walk(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, f) {
					return true
				}
			}
			return false
		case interface{ As(any) bool }:
			for _, e := range hidden(u) {
				if walk(e, f) {
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
