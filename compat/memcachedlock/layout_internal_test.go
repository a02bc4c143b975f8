package memcachedlock

import (
	"errors"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The suffixes are checked on the item, the prefix and the key together:
// a key that is plain on its own may end, after its prefix, as a lock's
// marker or quiet item does (prefix "k:" and key "alive" would be the
// marker of the lock "k", and the two locks would share it).
func TestKeyPrefixLayout(t *testing.T) {
	mc := memcache.New("127.0.0.1:1")
	for _, tc := range []struct {
		prefix, key string
		ok          bool
	}{
		{"", "k", true},
		{"k:", "alive", false}, // the marker of New(mc, "k")
		{"k:", "quiet", false}, // its quiet item
		{"k", ":alive", false},
		{"k:al", "ive", false},
		{"k:alive", "", false},
		{"", "k:alive", false},
		{"app:", "k:quiet", false},
		{"app:", "alive", false}, // app:alive: the marker of New(mc, "app")
		{"app", "alive", true},   // appalive
		{"k:", "alive2", true},
		{"k:alive", "x", true}, // the items k:alivex, k:alivex:alive, ...
		{"k:alive:", "x", true},
		{"", "alive", true},
		{"", ":alive:", true},
	} {
		l, err := prefixed(mc, tc.prefix, tc.key)
		if !tc.ok {
			require.ErrorIs(t, err, recipes.ErrInvalidArgument, "prefix %q, key %q", tc.prefix, tc.key)
			continue
		}
		require.NoError(t, err, "prefix %q, key %q", tc.prefix, tc.key)
		assert.Equal(t, tc.prefix+tc.key, l.Key())
	}
}

// No two locks with different items share an item, whatever their
// prefixes and keys: every pair of fragments, as prefix and as key.
func TestLayoutIsInjective(t *testing.T) {
	mc := memcache.New("127.0.0.1:1")
	fragments := []string{"", "k", ":", "k:", "alive", ":alive", "quiet", ":quiet", "al", "ive", ":al", "k:alive", "x:quiet", "a"}
	owner := map[string]string{} // item key -> the lock item it belongs to
	tried := 0
	for _, prefix := range fragments {
		for _, k1 := range fragments {
			for _, k2 := range fragments {
				key := k1 + k2
				l, err := prefixed(mc, prefix, key)
				if err != nil {
					require.ErrorIs(t, err, recipes.ErrInvalidArgument)
					continue
				}
				tried++
				for _, item := range []string{l.key, l.aliveKey, l.quietKey} {
					if o, ok := owner[item]; ok && o != l.key {
						t.Fatalf("%q is an item of the lock %q and of the lock %q (prefix %q, key %q)", item, o, l.key, prefix, key)
					}
					owner[item] = l.key
				}
			}
		}
	}
	assert.Greater(t, tried, 1000, "enough locks tried")
}

// ValidKeyPrefix is New's check of the prefix, for callers that check
// their input before they connect (zklock).
func TestValidKeyPrefix(t *testing.T) {
	mc := memcache.New("127.0.0.1:1")
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{"app:", true},
		{"k:alive", true},
		{strings.Repeat("p", MaxKeyLen-1), true},
		{strings.Repeat("p", MaxKeyLen), false},
		{"my app:", false},
		{"app\n", false},
		{"app\x7f", false},
	} {
		err := ValidKeyPrefix(tc.prefix)
		_, newErr := prefixed(mc, tc.prefix, "k")
		if tc.ok {
			assert.NoError(t, err, "%q", tc.prefix)
			assert.NoError(t, newErr, "%q", tc.prefix)
			continue
		}
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", tc.prefix)
		assert.True(t, errors.Is(newErr, recipes.ErrInvalidArgument) && newErr.Error() == err.Error(),
			"New refuses it as ValidKeyPrefix does: %v", newErr)
	}
}

// prefixed is the lock key over a Client of mc with prefix.
func prefixed(mc Memcached, prefix, key string) (*Lock, error) {
	c, err := NewClient(mc, WithoutEvictionCheck(), WithKeyPrefix(prefix))
	if err != nil {
		return nil, err
	}
	return New(c, key)
}
