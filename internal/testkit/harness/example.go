package harness

import (
	"fmt"
	"slices"
	"testing"
)

// ForExample runs start, a starter that wants a testing.TB (StartRedis,
// StartMemcached, ...), for an Example, which has none: it returns what
// start returned and the stop the example defers (the clean-ups start
// registered, last first). A failure panics, after stopping what was
// started, as zktest.SharedForExample does when no server can be had.
func ForExample[T any](start func(testing.TB) T) (started T, stop func()) {
	t := &exampleT{}
	defer t.cleanUpOnPanic()
	return start(t), t.cleanUp
}

// exampleT is the testing.TB of ForExample: it keeps the clean-ups, and
// failing panics.
type exampleT struct {
	testing.TB // nil: the harness calls only the methods below
	cleanups   []func()
}

func (t *exampleT) Helper()                      {}
func (t *exampleT) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Failed() bool                 { return false }
func (t *exampleT) Logf(string, ...any)          {}
func (t *exampleT) Errorf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (t *exampleT) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (t *exampleT) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (t *exampleT) Skip(args ...any)             { panic(fmt.Sprint(args...)) }
func (t *exampleT) Skipf(f string, args ...any)  { panic(fmt.Sprintf(f, args...)) }

// cleanUp runs the clean-ups, last registered first, as testing does.
func (t *exampleT) cleanUp() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	t.cleanups = nil
}

// cleanUpOnPanic, deferred, stops what was started before a panic.
func (t *exampleT) cleanUpOnPanic() {
	if r := recover(); r != nil {
		t.cleanUp()
		panic(r)
	}
}
