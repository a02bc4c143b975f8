package harness

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Loopback is the only address the harness listens on or starts servers on.
const Loopback = "127.0.0.1"

// FreePorts returns n distinct free TCP ports on Loopback, none of them
// returned before in this process. The listeners are held until all ports
// are chosen, so the ports differ from each other; and a port handed out
// once is not handed out again, so a server's port cannot be given to
// another before the first binds it (a cluster node's bus port was once
// the node's own client port, released for the server to bind). Another
// process may still take one before the server binds it, which is rare.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	handedOut.Lock()
	defer handedOut.Unlock()
	for tries := 0; len(ports) < n; tries++ {
		if tries == n+maxPortRetries {
			return nil, fmt.Errorf("find a free port: %d tries gave only ports handed out before", tries)
		}
		l, err := net.Listen("tcp", Loopback+":0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l) // held: the next Listen gets another port
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// handedOut are the ports FreePorts returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// maxPortRetries bounds how many ports handed out before FreePorts skips.
const maxPortRetries = 1000

// hostPort joins 127.0.0.1 and port.
func hostPort(port int) string {
	return net.JoinHostPort(Loopback, fmt.Sprint(port))
}

// splitAddrs splits a comma separated list of host:port, dropping blanks.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// exchange dials addr, writes req (if any), and reads until the server closes
// the connection, until done reports the reply complete, or until timeout.
func exchange(addr, req string, timeout time.Duration, done func(reply string) bool) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if req != "" {
		if _, err := conn.Write([]byte(req)); err != nil {
			return "", err
		}
	}
	var sb strings.Builder
	buf := make([]byte, 4096)
	for i := 0; i < 1024; i++ { // bounded: at most 4 MiB of reply
		n, err := conn.Read(buf)
		sb.Write(buf[:n])
		if done != nil && done(sb.String()) {
			return sb.String(), nil
		}
		if err != nil {
			if sb.Len() > 0 && done == nil {
				return sb.String(), nil // closed by the server: the whole reply
			}
			return sb.String(), err
		}
	}
	return sb.String(), fmt.Errorf("reply from %s too long", addr)
}
