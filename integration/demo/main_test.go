package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo that `make demo` runs works end to end: four zklock processes
// take the lock one after the other and leave nothing behind; then a
// holder whose server is stopped is told and exits 76.
func TestDemo(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
