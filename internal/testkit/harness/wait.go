package harness

import (
	"errors"
	"fmt"
	"time"
)

// waitFor polls check every interval until it returns nil, the deadline passes
// or the process exits. The error names what was awaited and includes the
// check's last error and the log tail.
func waitFor(p *process, what string, timeout, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	maxTries := max(int(timeout/interval)+1, 1)
	var last error
	for i := 0; i < maxTries; i++ {
		if last = check(); last == nil {
			return nil
		}
		if p != nil {
			select {
			case <-p.exited():
				return fmt.Errorf("%s: %s exited (%s) before %s: %v\n%s",
					what, p.name, p.exitStatus(), what, last, p.logTail(40))
			default:
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(interval)
	}
	msg := fmt.Sprintf("%s: not done within %v: %v", what, timeout, last)
	if p != nil {
		msg += "\n" + p.logTail(40)
	}
	return errors.New(msg)
}
