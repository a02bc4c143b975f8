package ttl

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPermanent(t *testing.T) {
	base := errors.New("closed")
	err := Permanent(base)
	assert.ErrorIs(t, err, ErrPermanent)
	assert.ErrorIs(t, err, base)
	assert.Equal(t, "closed", err.Error())
	assert.Equal(t, err, Permanent(err), "not wrapped twice")
	assert.NoError(t, Permanent(nil))
}

// The marks: Permanent ends everything; Refused ends an acquisition (it
// is ErrPermanent) but not a renewal; Transient hides the marks inside.
// The outermost mark says what a renewal does.
func TestMarks(t *testing.T) {
	base := errors.New("x509: certificate signed by unknown authority")
	var down = errors.New("connection refused")
	for _, tc := range []struct {
		name        string
		err         error
		permanent   bool // errors.Is ErrPermanent: an acquisition gives up
		endsRenewal bool
	}{
		{"unmarked", base, false, false},
		{"permanent", Permanent(base), true, true},
		{"refused", Refused(base), true, false},
		{"transient", Transient(base), false, false},
		{"wrapped refused", fmt.Errorf("server a: %w", Refused(base)), true, false},
		{"permanent around refused", Permanent(fmt.Errorf("all: %w", Refused(base))), true, true},
		{"refused around permanent", Refused(fmt.Errorf("all: %w", Permanent(base))), true, false},
		{"transient around permanent", Transient(fmt.Errorf("1 of 3: %w", Permanent(base))), false, false},
		{"transient around joined", Transient(errors.Join(Permanent(base), down)), false, false},
		{"permanent around transient", Permanent(Transient(Permanent(base))), true, true},
	} {
		assert.Equal(t, tc.permanent, errors.Is(tc.err, ErrPermanent), tc.name)
		assert.Equal(t, tc.endsRenewal, EndsRenewal(tc.err), tc.name)
		assert.ErrorIs(t, tc.err, base, "%s: the rest seen through", tc.name)
	}
	var a x509.UnknownAuthorityError
	assert.ErrorAs(t, fmt.Errorf("%w: %w", Transient(Permanent(a)), down), &a, "errors.As sees through Transient")
	for _, mark := range []func(error) error{Permanent, Refused, Transient} {
		assert.Equal(t, base.Error(), mark(base).Error(), "the text is the error's")
	}
	assert.NoError(t, Refused(nil))
	assert.NoError(t, Transient(nil))
	r := Refused(base)
	assert.Equal(t, r, Refused(r), "not wrapped twice")
	tr := Transient(base)
	assert.Equal(t, tr, Transient(tr), "not wrapped twice")
	p := Permanent(r)
	assert.NotEqual(t, r, p, "Permanent marks a Refused error anew")
	assert.True(t, EndsRenewal(p))

	// Retry, an acquisition's or a release's, gives up at Refused; a
	// renewal does not.
	for _, err := range []error{Permanent(base), Refused(base)} {
		tries := 0
		got := Retry(context.Background(), 0, func() error { tries++; return err })
		assert.Equal(t, err, got)
		assert.Equal(t, 1, tries, "%v: not tried again", err)
	}
}
