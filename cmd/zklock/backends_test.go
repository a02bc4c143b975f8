package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every flag a backend registers is accepted with that backend, and
// refused with each backend that does not register it, the error naming
// the flag: the cross-checks come from the registrations.
func TestBackendFlagsFromRegistrations(t *testing.T) {
	_, bs, takers := runFlags(&runOptions{}, &kindFlags{})
	for _, b := range bs {
		own := newFlagSet(b.name())
		b.register(own)
		for name := range takers {
			arg := "--" + name + "=1"
			if f := own.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					arg = "--" + name
				}
			}
			_, err := parseRun([]string{"--backend", b.name(), arg, "/p", "--", "true"})
			msg := "--" + name + " needs --backend "
			if own.Lookup(name) != nil {
				if err != nil {
					assert.NotContains(t, err.Error(), msg, "--backend %s takes %s", b.name(), arg)
				}
				continue
			}
			if assert.Error(t, err, "--backend %s %s", b.name(), arg) {
				assert.Contains(t, err.Error(), msg+orList(takers[name]), "--backend %s %s", b.name(), arg)
			}
		}
	}
	assert.Equal(t, []string{backendZK, backendRedis, backendCluster, backendSentinel, backendRedlock, backendMySQL},
		takers["tls-ca"], "PostgreSQL takes its TLS files in the DSN")
	assert.Equal(t, []string{backendZK}, takers["read"])
}
