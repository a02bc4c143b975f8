package session_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }
