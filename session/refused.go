package session

import (
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// refusals are the connection attempts refused since the last connection
// (package refusal's rule: a TLS handshake refused either way, a plain
// server at a TLS client), by server. Connect waits for its first session
// no longer once every server of the list has refused in one round: the
// next round meets the same answers, and waiting until the connection
// timeout tells the caller nothing more. A round is one attempt at each
// address of each server of the list (hostProvider tries each once before
// it tries one again); any other failure (a server down, which may come
// back and accept) starts the count again, so Connect then waits as it
// always does.
type refusals struct {
	mu      sync.Mutex
	refused map[target]*attemptError // since the last connection or other failure
	order   []target                 // the keys of refused, in the order they came
	onAll   func(error)              // Connect's, while it waits; nil after
}

// note notes the failed attempt e at address, of a list of servers
// addresses in all, and tells Connect when every one of them refused.
func (r *refusals) note(address, host string, e *attemptError, servers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !refusal.Is(e.err) {
		r.clearLocked()
		return
	}
	t := target{addr: address, host: host}
	if r.refused == nil {
		r.refused = make(map[target]*attemptError)
	}
	if _, again := r.refused[t]; !again {
		r.order = append(r.order, t)
	}
	r.refused[t] = e
	if servers > 0 && len(r.refused) >= servers && r.onAll != nil {
		round := &refusedRound{attempts: make([]*attemptError, 0, len(r.order))}
		for _, t := range r.order {
			round.attempts = append(round.attempts, r.refused[t])
		}
		r.onAll(round)
	}
}

// reset forgets the refusals: a connection was made.
func (r *refusals) reset() {
	r.mu.Lock()
	r.clearLocked()
	r.mu.Unlock()
}

func (r *refusals) clearLocked() {
	clear(r.refused)
	r.order = r.order[:0]
}

// waitFor sets the function told of a round of refusals (nil: none).
func (r *refusals) waitFor(f func(error)) {
	r.mu.Lock()
	r.onAll = f
	r.mu.Unlock()
}

// refusedRound is Connect's error when every server refused: each
// server's refusal, in the order they came. It is recipes.ErrRefused, and
// errors.As finds the refusals' own errors (an x509 error, a TLS alert).
type refusedRound struct {
	attempts []*attemptError
}

func (e *refusedRound) Error() string {
	msgs := make([]string, len(e.attempts))
	for i, a := range e.attempts {
		msgs[i] = a.Error()
	}
	return "every server refused the client: " + strings.Join(msgs, "; ")
}

func (e *refusedRound) Unwrap() []error {
	errs := make([]error, len(e.attempts))
	for i, a := range e.attempts {
		errs[i] = a
	}
	return errs
}

// Is makes the error recipes.ErrRefused.
func (e *refusedRound) Is(target error) bool { return target == recipes.ErrRefused }
