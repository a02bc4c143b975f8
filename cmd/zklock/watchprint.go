package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/zkrecipes/zkrecipes/cache"
)

// The kinds of watch's lines (and its JSON records' types).
const (
	watchExists      = "exists" // a node of the current state, printed first
	watchCreated     = "created"
	watchChanged     = "changed"
	watchDeleted     = "deleted"
	watchInitialized = "initialized" // --json only: the current state is printed
	watchStale       = "stale"       // --json only (text: on stderr)
	watchFresh       = "fresh"       // --json only (text: on stderr)
	watchRefused     = "refused"     // --json only (text: on stderr): a node the ACL refuses to read
)

// watchPrinter turns the cache's events into watch's lines, buffered
// until flush. Until the cache is initialised it folds the events of the
// first load into the current state, printed at Initialized as "exists"
// lines, sorted by path: the first load may already tell changes (a
// reconnection during it is followed by a resynchronisation, whose events
// are the difference), and the state printed is exactly the view when the
// cache said Initialized, the changes after it following as lines of their
// own.
type watchPrinter struct {
	w       *bufio.Writer
	enc     *json.Encoder // on w
	encErr  error         // the first error of enc
	json    bool
	data    bool
	initial map[string]cache.Node // nil once the current state is printed
}

func newWatchPrinter(w io.Writer, o *watchOptions) *watchPrinter {
	p := &watchPrinter{w: bufio.NewWriter(w), json: o.json, data: o.data, initial: map[string]cache.Node{}}
	p.enc = json.NewEncoder(p.w)
	p.enc.SetEscapeHTML(false) // paths and data as they are: "&", not "\u0026"
	return p
}

// event prints ev (or, before Initialized, folds it into the current
// state); n is the number of nodes of the current state, for Initialized.
func (p *watchPrinter) event(ev cache.Event) (n int, err error) {
	if p.initial != nil {
		switch ev.Type {
		case cache.Created, cache.Changed:
			p.initial[ev.Node.Path] = ev.Node
			return 0, nil
		case cache.Deleted:
			delete(p.initial, ev.Node.Path)
			return 0, nil
		case cache.Initialized:
			n = len(p.initial)
			for _, path := range slices.Sorted(maps.Keys(p.initial)) {
				p.node(watchExists, p.initial[path])
			}
			p.initial = nil
			if p.json {
				p.record(watchInitialized)
			}
			return n, p.err()
		}
	}
	switch ev.Type {
	case cache.Created:
		p.node(watchCreated, ev.Node)
	case cache.Changed:
		p.node(watchChanged, ev.Node)
	case cache.Deleted:
		p.node(watchDeleted, ev.Node)
	case cache.Stale:
		p.record(watchStale)
	case cache.Fresh:
		p.record(watchFresh)
	case cache.Refused:
		p.writeJSON(struct {
			Type  string `json:"type"`
			Path  string `json:"path"`
			Error string `json:"error"`
		}{watchRefused, ev.Node.Path, ev.Err.Error()})
	}
	return 0, p.err()
}

// nodeRecord is a node's JSON record. Data is base64 (JSON strings hold
// text only: any bytes go through losslessly), and only with --data.
type nodeRecord struct {
	Type       string  `json:"type"`
	Path       string  `json:"path"`
	Mzxid      int64   `json:"mzxid"`
	Czxid      int64   `json:"czxid"`
	Version    int32   `json:"version"`
	DataLength int32   `json:"data_length"`
	Data       *string `json:"data,omitempty"`
}

// node prints one node's line (or record) of kind.
func (p *watchPrinter) node(kind string, n cache.Node) {
	if p.json {
		rec := nodeRecord{Type: kind, Path: n.Path, Mzxid: n.Stat.Mzxid, Czxid: n.Stat.Czxid,
			Version: n.Stat.Version, DataLength: n.Stat.DataLength}
		if p.data {
			s := base64.StdEncoding.EncodeToString(n.Data)
			rec.Data = &s
		}
		p.writeJSON(rec)
		return
	}
	fmt.Fprintf(p.w, "%s\t%s\t0x%x\t%d", kind, n.Path, n.Stat.Mzxid, n.Stat.DataLength)
	if p.data {
		fmt.Fprintf(p.w, "\t%s", displayData(n.Data))
	}
	p.w.WriteByte('\n')
}

// record prints a JSON record with its type alone.
func (p *watchPrinter) record(kind string) {
	p.writeJSON(struct {
		Type string `json:"type"`
	}{kind})
}

func (p *watchPrinter) writeJSON(v any) {
	if err := p.enc.Encode(v); err != nil && p.encErr == nil {
		p.encErr = err
	}
}

// err is the first error of a write (bufio keeps it) or of the encoder.
func (p *watchPrinter) err() error {
	if p.encErr != nil {
		return p.encErr
	}
	_, err := p.w.Write(nil)
	return err
}

// pending reports whether lines wait in the buffer.
func (p *watchPrinter) pending() bool { return p.w.Buffered() > 0 }

func (p *watchPrinter) flush() error { return p.w.Flush() }
