package ttl

import "errors"

// ErrPermanent marks an error that trying again cannot mend (a closed
// client, a refused authentication, a script the server rejects, a
// certificate refused): Acquire returns it at once, and a background
// release gives up. A renewal stops at it too, unless it is only Refused.
// Backends wrap such errors with Permanent or Refused; every other error
// is taken as transient (an unreachable server) and retried within the
// caller's context.
var ErrPermanent = errors.New("permanent")

// Permanent marks err as permanent (nil stays nil): an acquisition, a
// renewal and a release all give up at it.
func Permanent(err error) error {
	if err == nil || markOf(err) == forGood {
		return err
	}
	return permanentError{err, forGood}
}

// Refused marks err as a new connection's refusal that trying again meets
// again, a certificate refused (package refusal's rule) (nil stays nil). It is
// ErrPermanent, so an acquisition returns it at once and a release gives
// up; but a renewal tries again, as after a transient error, until the
// lease's deadline: a connection the client already holds may still work
// (a pool's, made before a certificate was rotated), and a holder gains
// nothing by ending its lease before then.
func Refused(err error) error {
	if err == nil || markOf(err) == refused {
		return err
	}
	return permanentError{err, refused}
}

// Transient marks err as one that trying again may mend (nil stays nil):
// it is not ErrPermanent, whatever it wraps, and errors.Is and errors.As
// see through it to everything else. Redlock's renewal uses it for a
// server's permanent error while a majority of the servers may still
// answer.
func Transient(err error) error {
	if err == nil || markOf(err) == transient {
		return err
	}
	return transientError{err}
}

// EndsRenewal reports whether a renewal that failed with err is not tried
// again: err is marked Permanent, and its outermost mark is not Refused
// or Transient.
func EndsRenewal(err error) bool { return markOf(err) == forGood }

// mark is how an error is marked for trying again.
type mark int

const (
	unmarked  mark = iota // transient: not ErrPermanent
	forGood               // Permanent
	refused               // Refused: permanent, but a renewal tries again
	transient             // Transient: not ErrPermanent, whatever it wraps
)

// marked is the type of the marks' errors.
type marked interface{ mark() mark }

// markOf is err's outermost mark (the first found as errors.As searches),
// or unmarked.
func markOf(err error) mark {
	var m marked
	if errors.As(err, &m) {
		return m.mark()
	}
	return unmarked
}

type permanentError struct {
	err  error
	kind mark // forGood or refused
}

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() error        { return e.err }
func (e permanentError) Is(target error) bool { return target == ErrPermanent }
func (e permanentError) mark() mark           { return e.kind }

// transientError hides the marks of the error it wraps: it has no Unwrap,
// and answers errors.Is and errors.As for it, but never for ErrPermanent
// or a mark.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) mark() mark    { return transient }

func (e transientError) Is(target error) bool {
	return target != ErrPermanent && errors.Is(e.err, target)
}

func (e transientError) As(target any) bool {
	switch target.(type) {
	case *marked, *permanentError:
		return false // the marks inside stay hidden
	}
	return errors.As(e.err, target)
}
