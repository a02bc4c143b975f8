package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/locks/orders-1", "/ünï/côdé", "/a.b/..c"} {
		assert.NoError(t, ValidatePath(p), p)
	}
	for p, why := range map[string]string{
		"":          "empty",
		"a/b":       "not absolute",
		"/a/":       "trailing slash",
		"//a":       "empty segment",
		"/a//b":     "empty segment",
		"/a/./b":    "relative segment",
		"/a/..":     "relative segment",
		"/a\x00b":   "character U+0000",
		"/a\x1fb":   "character U+001F",
		"/a\u0085b": "character U+0085",
		"/a\uf000":  "character U+F000",
		"/a\ufff5":  "character U+FFF5",
		"/a\xffb":   "UTF-8",
	} {
		err := ValidatePath(p)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%q", p)
		assert.ErrorContains(t, err, why, "%q", p)
	}
}

func TestPathHelpers(t *testing.T) {
	assert.Equal(t, "/a/b", JoinPath("/a", "b"))
	assert.Equal(t, "/b", JoinPath("/", "b"))
	assert.Equal(t, "/a", ParentPath("/a/b"))
	assert.Equal(t, "/", ParentPath("/a"))
	assert.Equal(t, "b", BaseName("/a/b"))

	ns := namespace("/app")
	assert.Equal(t, "/app/x", ns.full("/x"))
	assert.Equal(t, "/app", ns.full("/"))
	assert.Equal(t, "/x", ns.strip("/app/x"))
	assert.Equal(t, "/", ns.strip("/app"))
	assert.Equal(t, "/x", namespace("").full("/x"))
	assert.Equal(t, "/x", namespace("").strip("/x"))
}

func TestParseServers(t *testing.T) {
	got, err := parseServers([]string{"127.0.0.1:2181", " zk1 ", "[::1]:2182", "[::1]"})
	assert.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:2181", "zk1:2181", "[::1]:2182", "[::1]:2181"}, got)
	for _, bad := range [][]string{nil, {}, {""}, {"host:abc"}, {"host:0"}, {"host:70000"}, {":2181"}, {"a:b:c"}} {
		_, err := parseServers(bad)
		assert.ErrorIs(t, err, ErrInvalidArgument, "%q", bad)
	}
}

func TestFencedEncoding(t *testing.T) {
	tok, data, err := decodeFenced(encodeFenced(42, []byte("a\nb")))
	assert.NoError(t, err)
	assert.Equal(t, int64(42), tok)
	assert.Equal(t, []byte("a\nb"), data)
	tok, _, err = decodeFenced(nil)
	assert.NoError(t, err)
	assert.Zero(t, tok)
	for _, raw := range []string{"nonl", "x\ny", "-3\n"} {
		_, _, err := decodeFenced([]byte(raw))
		assert.Error(t, err, raw)
	}
}
