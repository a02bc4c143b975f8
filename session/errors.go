package session

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// The errors of package session; test them with errors.Is. Errors from the
// ZooKeeper client (ErrNoNode, ErrNodeExists, ...) are wrapped, so
// errors.Is works on them too. A refusal is recipes.ErrRefused: an
// operation the nodes' ACL refuses to the client's identity
// (ErrNoAuth), credentials the server refused (ErrAuthFailed), and
// a Connect that every server refused (see Connect).
var (
	// ErrInvalidArgument: bad input (path, context, servers, option value).
	// It is recipes.ErrInvalidArgument too, the module's one sentinel for
	// bad input: errors.Is(err, recipes.ErrInvalidArgument) holds for every
	// bad input of every package.
	ErrInvalidArgument = fmt.Errorf("session: %w", recipes.ErrInvalidArgument)
	// ErrClosed: the Client was closed.
	ErrClosed = locktrace.NewEndError("session: client closed", locktrace.EndClosed)
	// ErrSuspended is the cause of a session value's end under the default
	// policy when the connection was lost and the session may still live.
	ErrSuspended = locktrace.NewEndError("session: connection suspended", locktrace.EndSuspended)
	// ErrSessionLost is the cause of a session value's end when the session
	// expired, or was suspended past what the error policy allows.
	ErrSessionLost = locktrace.NewEndError("session: session lost", locktrace.EndSessionLost)
	// ErrRetriesExhausted: a retryable error persisted past the RetryPolicy.
	ErrRetriesExhausted = errors.New("session: retries exhausted")
	// ErrGuardFailed: a guarded write (CreateWithZxid with guards, a lease's
	// GuardedMulti) did nothing because the guard node is gone.
	ErrGuardFailed = errors.New("session: guard node does not exist")
	// ErrStaleToken: FencedResource refused a write whose token is lower than
	// one it has already accepted.
	ErrStaleToken = errors.New("session: stale fencing token")
	// ErrNotConnected: Connect gave up before the first session was
	// established (connection timeout).
	ErrNotConnected = errors.New("session: not connected")
	// ErrRequestTooLarge: a write larger than the server accepts (see
	// WithMaxRequestSize) was refused before anything was sent. It is also
	// ErrInvalidArgument.
	ErrRequestTooLarge = fmt.Errorf("%w: request too large", ErrInvalidArgument)
	// ErrTTLDisabled: the server refused a TTL node (CreateTTL): it runs
	// without zookeeper.extendedTypesEnabled=true (a Java system property,
	// or extendedTypesEnabled=true in zoo.cfg).
	ErrTTLDisabled = errors.New("session: TTL nodes are disabled on the server (set zookeeper.extendedTypesEnabled=true)")
)

// markRefusal marks err as recipes.ErrRefused when it is the server's
// refusal of the client's identity: the nodes' ACL does not grant it
// (ErrNoAuth), or the server refused its credentials
// (ErrAuthFailed). The same request with the same credentials meets
// the same answer, so nothing retries it (IsRetryable is false).
func markRefusal(err error) error {
	if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) {
		return refusal.As(err, refusal.Auth)
	}
	return err
}
