package harness

import (
	"bufio"
	"fmt"
	"strings"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange.
const fourLetterTimeout = 3 * time.Second

// FourLetterWord sends a ZooKeeper four-letter command ("ruok", "srvr", "mntr",
// "cons", "stat", ...) to addr and returns the whole reply. The server must
// allow the command (4lw.commands.whitelist; servers started here allow all).
func FourLetterWord(addr, cmd string) (string, error) {
	reply, err := exchange(addr, cmd, fourLetterTimeout, nil)
	if err != nil {
		return reply, fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	return reply, nil
}

// Mntr runs `mntr` against addr and parses its "key<TAB>value" lines, e.g.
// m["zk_server_state"] == "leader", m["zk_znode_count"] == "5".
func Mntr(addr string) (map[string]string, error) {
	reply, err := FourLetterWord(addr, "mntr")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("mntr to %s: unexpected reply %q", addr, reply)
	}
	return m, nil
}

// serverMode asks addr for `srvr` and returns its Mode ("leader", "follower",
// "observer", "standalone"). A server that is up but not serving (no quorum
// yet) yields an error.
func serverMode(addr string) (string, error) {
	reply, err := FourLetterWord(addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("srvr to %s: %s", addr, strings.TrimSpace(reply))
}

// ruok reports nil when addr answers `ruok` with imok.
func ruok(addr string) error {
	reply, err := FourLetterWord(addr, "ruok")
	if err != nil {
		return err
	}
	if reply != "imok" {
		return fmt.Errorf("ruok to %s: %q", addr, reply)
	}
	return nil
}
