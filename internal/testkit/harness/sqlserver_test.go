package harness

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// When a test ends, its SQL servers are gone, every process of theirs
// (PostgreSQL's backends too, and a paused server's) and every file.
func TestSQLServersCleanUp(t *testing.T) {
	var roots []string
	var pids []int
	t.Run("servers", func(t *testing.T) {
		pg := StartPostgres(t)
		b := StartPgBouncer(t, pg)
		b.Query(t, "SELECT 1")
		for _, s := range []*dbServer{&pg.s, &b.s} {
			roots = append(roots, s.root)
			pids = append(pids, s.pid())
		}
		pids = append(pids, childPIDs(pg.s.pid())...)
		pg.Pause(t) // a paused server goes too
		m := StartMariaDB(t)
		roots = append(roots, m.s.root)
		pids = append(pids, m.s.pid())
	})
	if len(roots) == 0 {
		t.Skip("no servers were started")
	}
	for _, root := range roots {
		if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", root, err)
		}
	}
	if err := waitGone(pids, killWait); err != nil {
		t.Error(err)
	}
}

// procStat reads this process's own parent and state.
func TestProcStat(t *testing.T) {
	ppid, state, ok := procStat(os.Getpid())
	if !ok || ppid != os.Getppid() || isDead(state) {
		t.Fatalf("procStat(self) = %d, %c, %v; want %d, a live state, true", ppid, state, ok, os.Getppid())
	}
	if _, _, ok := procStat(-1); ok {
		t.Fatal("procStat(-1) found a process")
	}
}

// Without the programs installed, each starter skips the test (it would
// fail it with ZKR_REQUIRE_INTEGRATION=1).
func TestSQLNothingInstalled(t *testing.T) {
	oldGlob, oldFind := postgresBinGlob, findSQLBinary
	postgresBinGlob = "/nonexistent/*/bin"
	findSQLBinary = func(name string) (string, error) { return "", unavailablef("no %s installed", name) }
	t.Cleanup(func() { postgresBinGlob, findSQLBinary = oldGlob, oldFind })
	t.Setenv(RequireEnv, "0")
	starters := []struct {
		name  string
		start func(t *testing.T)
	}{
		{"postgres", func(t *testing.T) { StartPostgres(t) }},
		{"mariadb", func(t *testing.T) { StartMariaDB(t) }},
		{"pgbouncer", func(t *testing.T) { StartPgBouncer(t, &Postgres{}) }},
	}
	for _, s := range starters {
		var sub testing.TB
		t.Run(s.name, func(t *testing.T) { sub = t; s.start(t) })
		if !sub.Skipped() {
			t.Errorf("%s did not skip without an install", s.name)
		}
	}
}
