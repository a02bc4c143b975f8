package zktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// NewLockerFunc builds the Locker of a kind ("write", "read", ...; the
// package under test chooses the names) at path on client.
type NewLockerFunc func(c *session.Client, path, kind string) (recipes.Locker, error)

// RunHolderIfChild turns this test binary into a holder process when it was
// started by StartHolder (see holdertest.RunIfChild): it connects with a
// session of its own and takes the lock newLocker builds. Call it first
// thing in TestMain.
func RunHolderIfChild(newLocker NewLockerFunc) {
	var client *session.Client
	holdertest.RunIfChild(func(spec string) (recipes.Locker, error) {
		parts := strings.Split(spec, "|")
		if len(parts) != 4 {
			return nil, fmt.Errorf("bad holder spec %q", spec)
		}
		timeout, err := time.ParseDuration(parts[3])
		if err != nil {
			return nil, err
		}
		ctx, cancel := contextWithLimit()
		defer cancel()
		client, err = session.Connect(ctx, strings.Split(parts[0], ","), session.WithSessionTimeout(timeout), session.WithLogger(nil))
		if err != nil {
			return nil, err
		}
		return newLocker(client, parts[1], parts[2])
	}, func(recipes.Locker, recipes.Lease) time.Time {
		until, _ := client.CurrentSession().TrustedUntil()
		return until
	})
}

// StartHolder starts this test binary as a child process (see
// RunHolderIfChild) holding the lock of kind at path, with its own session
// of the given timeout, and returns once it holds it. The child is killed
// at t's cleanup.
func StartHolder(t testing.TB, servers []string, path, kind string, sessionTimeout time.Duration) *holdertest.Holder {
	t.Helper()
	return holdertest.Start(t, fmt.Sprintf("%s|%s|%s|%s", strings.Join(servers, ","), path, kind, sessionTimeout))
}
