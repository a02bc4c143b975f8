package main

import (
	"flag"
	"fmt"
)

// The output formats of the listings (ls, watch, services): -o text (the
// default) or -o json; --json is -o json. Every listing prints JSON
// Lines: one object per line, so that a stream (watch) and a snapshot
// (ls, services) are read alike (jq -c, or a line at a time).
const (
	formatText = "text"
	formatJSON = "json"
)

// formatValue is the flag.Value of -o: text or json.
type formatValue struct{ json *bool }

func (v formatValue) String() string {
	if v.json != nil && *v.json {
		return formatJSON
	}
	return formatText
}

func (v formatValue) Set(s string) error {
	switch s {
	case formatText:
		*v.json = false
	case formatJSON:
		*v.json = true
	default:
		return fmt.Errorf("unknown format %q: text or json", s)
	}
	return nil
}

// registerFormat adds -o FORMAT, --output FORMAT and --json (-o json),
// setting json.
func registerFormat(fs *flag.FlagSet, json *bool) {
	fs.Var(formatValue{json}, "o", "output format: text or json (JSON Lines)")
	fs.Var(formatValue{json}, "output", "output format: text or json (JSON Lines)")
	fs.BoolVar(json, "json", false, "print JSON Lines (-o json)")
}
