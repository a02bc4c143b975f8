package readme

import (
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// root is the repository's root, where README.md and the root go.mod are.
var root = filepath.Join("..", "..", "..")

// localServer is the address the quick start connects to, as pasted.
const localServer = "127.0.0.1:2181"

// goBlock matches a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```$")

// quickStart returns the README's one Go block: a whole program.
func quickStart(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(text), -1)
	require.Len(t, blocks, 1, "README.md has one Go block, the quick start")
	src := blocks[0][1]
	require.True(t, strings.HasPrefix(src, "package main\n"), "the quick start is a whole program")
	return src
}

// build builds src as main.go of a module of its own that requires the
// root at the version its go.mod names and gets it from this repository
// through a go.work, as contrib modules do: it may import public packages
// only. It returns the binary.
func build(t *testing.T, src string) string {
	t.Helper()
	abs, err := filepath.Abs(root)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("main.go", src)
	write("go.mod", "module example.com/quickstart\n\ngo 1.26.0\n\nrequire github.com/zkrecipes/zkrecipes v0.1.0\n")
	write("go.work", "go 1.26.0\n\nuse (\n\t.\n\t"+abs+"\n)\n\nreplace github.com/zkrecipes/zkrecipes v0.1.0 => "+abs+"\n")
	bin := filepath.Join(dir, "quickstart")
	cmd := exec.CommandContext(zktest.Ctx(t), "go", "build", "-o", bin, ".")
	cmd.Dir = dir
	// No network: every module it needs is the root's, already in the
	// module cache and in the root's go.sum.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK="+filepath.Join(dir, "go.work"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the README's quick start:\n%s", out)
	return bin
}

// The quick start builds as pasted: full imports, public packages only,
// formatted as gofmt would.
func TestQuickStartBuilds(t *testing.T) {
	src := quickStart(t)
	formatted, err := format.Source([]byte(src))
	require.NoError(t, err)
	assert.Equal(t, string(formatted), src, "the quick start is gofmt-clean")
	build(t, src)
}

// The quick start runs as pasted against a local ZooKeeper (the test's,
// at the address the README names replaced by the test server's): it
// takes the lock, says its token, releases it, and leaves nothing behind.
func TestQuickStartRuns(t *testing.T) {
	src := quickStart(t)
	require.Equal(t, 1, strings.Count(src, `"`+localServer+`"`), "the quick start connects to %s", localServer)
	servers := zktest.Shared(t)
	bin := build(t, strings.Replace(src, `"`+localServer+`"`, `"`+strings.Join(servers, ",")+`"`, 1))

	c := zktest.Connect(t, servers)
	before := zxidNow(t, c)
	out, err := exec.CommandContext(zktest.Ctx(t), bin).CombinedOutput()
	require.NoError(t, err, "the quick start failed:\n%s", out)
	m := regexp.MustCompile(`(?m)^holding /locks/orders, fencing token ([1-9][0-9]*)$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "the quick start says its token:\n%s", out)
	assert.Contains(t, string(out), "done, releasing")
	after := zxidNow(t, c)
	token, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	// The token is the lock node's czxid: between two writes of this test,
	// it proves the quick start ran against this server. (Its parents are
	// containers, which the server removes once empty: their presence
	// proves nothing that lasts.)
	assert.Less(t, before, token, "the quick start's lock was created on this server, after the test began")
	assert.Less(t, token, after, "the quick start's lock was created on this server, before it ended")
	assert.Empty(t, zktest.Children(t, c, "/quickstart/locks/orders"), "no lock node left behind")
}

// zxidNow writes an ephemeral node and removes it: the zxid of its
// creation, a point in the server's order of writes.
func zxidNow(t *testing.T, c *session.Client) int64 {
	t.Helper()
	ctx := zktest.Ctx(t)
	path, err := c.Create(ctx, "/readme-zxid-", nil, session.EphemeralSequential)
	require.NoError(t, err)
	_, st, err := c.Exists(ctx, path)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, path, -1))
	return st.Czxid
}
