package multilock

import (
	"context"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// withValues is a context whose cancellation (Done, Err, Deadline, and so
// context.Cause) is its embedded Context's, and whose values are looked up
// first in the contexts of the member leases taken so far, newest first,
// then in the embedded Context. It is how the holdings of the members reach
// the members acquired after them and the multi-lease's context: each
// member's lease context carries that member's re-entry key, and a context
// has one parent, so no context derived from one member's lease carries
// the others'.
//
// The lease contexts are consulted through context.WithoutCancel, which
// answers nothing for the standard library's own key of the cancellation
// (the one context.Cause and propagation look up): that lookup goes on to
// the embedded Context, whose cancellation this context has. A context
// derived from a withValues is therefore cancelled with the embedded
// Context, and never with a member's lease.
type withValues struct {
	context.Context
	values []context.Context // WithoutCancel of the member leases' contexts, oldest first
}

// valuesOf returns the contexts whose values withValues looks up for leases.
func valuesOf(leases []recipes.Lease) []context.Context {
	values := make([]context.Context, len(leases))
	for i, le := range leases {
		values[i] = context.WithoutCancel(le.Context())
	}
	return values
}

// Value looks key up in the members' lease contexts, newest first, then in
// the embedded Context.
func (c *withValues) Value(key any) any {
	for i := len(c.values) - 1; i >= 0; i-- {
		if v := c.values[i].Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}
