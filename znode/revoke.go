package znode

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// RevokeMessage is what Curator's Revoker writes into a holder's lock node
// to ask it to release the lock.
const RevokeMessage = "__REVOKE__"

// Revoke asks the holder of the lock node at path to release it, as
// Curator's Revoker.attemptRevoke does: it writes RevokeMessage into the
// node. path is the node's full path (without the client's namespace): a
// Participant's Path, a Lease's Node, the leader's Leader.Node. A bare node
// name (a Participant's Name), or any other path that is not a node's, is
// an error that is recipes.ErrInvalidArgument, before anything is sent. Go
// and Curator holders that made their lock revocable learn it; others
// ignore it. The error wraps session.ErrNoNode when the node is gone.
func Revoke(ctx context.Context, c *session.Client, path string) error {
	switch {
	case c == nil:
		return fmt.Errorf("znode: %w: revoke: nil session client", recipes.ErrInvalidArgument)
	case path != "" && path[0] != '/':
		return fmt.Errorf("znode: %w: revoke %q: a node name, where the node's path is wanted "+
			"(a Participant's Path, not its Name)", recipes.ErrInvalidArgument, path)
	case path == "/":
		return fmt.Errorf("znode: %w: revoke %q: the root is no lock node", recipes.ErrInvalidArgument, path)
	}
	if err := session.ValidatePath(path); err != nil {
		return fmt.Errorf("znode: revoke: %w", err)
	}
	if _, err := c.Set(ctx, path, []byte(RevokeMessage), -1); err != nil {
		return fmt.Errorf("znode: revoke %s: %w", path, err)
	}
	return nil
}
