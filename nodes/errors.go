package nodes

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// The errors of package nodes; test them with errors.Is. They are also
// the causes a Placement ends with (context.Cause of its Context), beside
// the session's (session.ErrSuspended, session.ErrSessionLost,
// session.ErrClosed).
var (
	// ErrInvalidArgument: bad input (nil context or client, invalid path,
	// mode, TTL or option). It is recipes.ErrInvalidArgument too.
	ErrInvalidArgument = fmt.Errorf("nodes: %w", recipes.ErrInvalidArgument)
	// ErrClosed: the node was closed (Close); a Placement ends with it.
	ErrClosed = locktrace.NewEndError("nodes: closed", locktrace.EndReleased)
	// ErrDeleted: another client deleted the node (or replaced it with a
	// node of its own); a Placement ends with it, and the node is made
	// again.
	ErrDeleted = locktrace.NewEndError("nodes: node deleted by another client", locktrace.EndGone)
	// ErrCannotCreate: the server refuses the node for good (its ACL, a
	// TTL node on a server without extended types, an ephemeral parent):
	// the node stops being kept, and every wait returns this error,
	// joined with the server's.
	ErrCannotCreate = errors.New("nodes: the server refuses the node")
)
