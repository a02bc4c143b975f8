package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Jackson's default generator (what curator-x-discovery's
// JsonInstanceSerializer writes with) differs from encoding/json: it
// escapes only '"', '\\' and the control characters below U+0020 (\b, \t,
// \n, \f, \r short, the others \u00XX with upper-case hex), and writes
// everything else, '<', '>', '&', U+2028 and U+2029 included, as UTF-8.
// The bytes of a node written by Go must be the bytes Curator writes, so
// this file writes JSON as Jackson does.

// hexDigits are Jackson's (CharTypes.HC): upper case.
const hexDigits = "0123456789ABCDEF"

// appendString appends s as a JSON string, escaped as Jackson escapes it.
// Invalid UTF-8 becomes U+FFFD, as a Java String cannot hold it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendValue appends the JSON value raw re-written as Jackson writes it:
// compact, strings escaped as appendString does, numbers as their literal
// text (so a value Jackson wrote comes out byte for byte), members in the
// order given. It fails unless raw is exactly one JSON value.
func appendValue(b []byte, raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// open is the stack of containers being written: for each, whether it
	// is an object and how many tokens (keys and values) it holds so far.
	type frame struct {
		object bool
		n      int
	}
	var open []frame
	for first := true; first || len(open) > 0; first = false {
		tok, err := dec.Token()
		if err != nil {
			return b, fmt.Errorf("not one JSON value: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			open = open[:len(open)-1]
			b = append(b, byte(d))
			continue
		}
		if len(open) > 0 {
			top := &open[len(open)-1]
			switch {
			case top.object && top.n%2 == 1:
				b = append(b, ':')
			case top.n > 0:
				b = append(b, ',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			open = append(open, frame{object: v == '{'})
			b = append(b, byte(v))
		case string:
			b = appendString(b, v)
		case json.Number:
			b = append(b, v...)
		case bool:
			if v {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		case nil:
			b = append(b, "null"...)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return b, errors.New("not one JSON value: more after its end")
	}
	return b, nil
}
