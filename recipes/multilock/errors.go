package multilock

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// What a member was doing when it failed: MemberError.Op.
const (
	OpAcquire    = "Acquire"    // the member's Acquire failed
	OpTryAcquire = "TryAcquire" // the member's TryAcquire failed (ErrLocked: held elsewhere)
	OpRelease    = "Release"    // the member's Release returned an error
	OpLost       = "lost"       // the member's lease ended while the MultiLock held or was taking it
)

// MemberError is an error of one member of a MultiLock: which member, what
// it was doing, and its own error. Every error of the package about a
// member is one; errors.As finds it, and errors.Is sees through it to the
// member's error.
type MemberError struct {
	// Index is the member's position among the lockers given to New
	// (0-based; MultiLock.Lockers and Lease.Leases use the same).
	Index int
	// Locker is the member.
	Locker recipes.Locker
	// Op is what it was doing: OpAcquire, OpTryAcquire, OpRelease or
	// OpLost.
	Op string
	// Err is the member's error (for OpLost, the cause of its lease's
	// context).
	Err error
}

// Error says which member, what it did, and its error.
func (e *MemberError) Error() string {
	return fmt.Sprintf("multilock: member %d (%s): %s: %v", e.Index, describe(e.Locker), e.Op, e.Err)
}

// Unwrap is the member's error.
func (e *MemberError) Unwrap() error { return e.Err }

// describe names a Locker for messages: its String (every lock of
// zkrecipes has one: "mutex /locks/orders", "redislock orders"), or, for a
// Locker from outside that has none, its type.
func describe(l recipes.Locker) string {
	switch v := l.(type) {
	case nil:
		return "nil"
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprintf("%T", l)
}

// lostError is the cause of a multi-lease whose member i ended with cause:
// it is recipes.ErrLockLost even when the member's cause is not (a member
// lease released on its own ends with recipes.ErrReleased).
func lostError(i int, l recipes.Locker, cause error) error {
	var err error = &MemberError{Index: i, Locker: l, Op: OpLost, Err: cause}
	if !errors.Is(err, recipes.ErrLockLost) {
		err = fmt.Errorf("%w: %w", recipes.ErrLockLost, err)
	}
	return err
}

// failure is what Acquire or TryAcquire returns when it gives up: head (the
// reason: ctx's NotAcquired error, a member lost meanwhile, or nil), then
// the member's error (nil when no member call failed) and the errors of
// releasing what it had taken, joined. The result is always
// recipes.ErrNotAcquired.
func failure(head, member, released error) error {
	err := errors.Join(head, member, released)
	if !errors.Is(err, recipes.ErrNotAcquired) {
		err = errors.Join(recipes.ErrNotAcquired, err)
	}
	return err
}
