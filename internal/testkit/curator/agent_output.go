package curator

import (
	"bytes"
	"strings"
	"sync"
)

// lineQueue is an io.Writer that splits what is written into lines and
// queues them, without ever blocking the writer.
type lineQueue struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	notify  chan struct{} // a token after each Write that completed a line
}

func newLineQueue() *lineQueue { return &lineQueue{notify: make(chan struct{}, 1)} }

func (q *lineQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	q.partial = append(q.partial, p...)
	n := 0
	for {
		i := bytes.IndexByte(q.partial, '\n')
		if i < 0 {
			break
		}
		q.lines = append(q.lines, strings.TrimSuffix(string(q.partial[:i]), "\r"))
		q.partial = q.partial[i+1:]
		n++
	}
	q.mu.Unlock()
	if n > 0 {
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (q *lineQueue) pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lines) == 0 {
		return "", false
	}
	s := q.lines[0]
	q.lines = q.lines[1:]
	return s, true
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return "(nothing)"
	}
	return string(b.buf)
}
