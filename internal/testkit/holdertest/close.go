package holdertest

import (
	"testing"
	"time"
)

// CloseDuring runs close (a lock client's Close, which waits for its
// clean-ups in the background) on a goroutine of its own, calls during
// meanwhile (to let those clean-ups finish, say by restoring the server;
// nil for nothing), and returns close's error once it returned, within
// WaitLimit.
func CloseDuring(t *testing.T, close func() error, during func()) error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- close() }()
	if during != nil {
		during()
	}
	select {
	case err := <-closed:
		return err
	case <-time.After(WaitLimit):
		t.Fatal("Close did not return")
		return nil
	}
}
