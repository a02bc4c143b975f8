package main

import (
	"regexp"
	"slices"
	"strings"
)

// masked replaces a password in messages.
const masked = "xxxxx"

// maskDSN is dsn with its passwords masked, for messages: the password of
// a URL (postgres://user:PASSWORD@host/db) or of a MySQL DSN
// (user:PASSWORD@tcp(host:port)/db), and a password=VALUE setting (a
// PostgreSQL keyword/value string, or a URL's query). It errs on the side
// of masking more: a malformed DSN (an unescaped @ in the password, say)
// must not show any of it.
func maskDSN(dsn string) string {
	spans := passwordSpans(dsn)
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(dsn[last:s[0]])
		b.WriteString(masked)
		last = s[1]
	}
	b.WriteString(dsn[last:])
	return b.String()
}

// dsnSecrets are the passwords that maskDSN masks in dsn, as written.
func dsnSecrets(dsn string) []string {
	var out []string
	for _, s := range passwordSpans(dsn) {
		out = append(out, dsn[s[0]:s[1]])
	}
	return out
}

// passwordKey finds a password=VALUE setting: at the start, after a space
// (keyword/value) or in a URL's query.
var passwordKey = regexp.MustCompile(`(?i)(?:^|[\s?&])password\s*=\s*`)

// passwordSpans are the byte ranges [start, end) of dsn's passwords, in
// order, not overlapping and not empty.
func passwordSpans(dsn string) [][2]int {
	var spans [][2]int
	// The user information: from the first ':' after the scheme (if any)
	// to the last '@' of all (the drivers split at the last '@' before the
	// host or the database, so a password may hold '@' and ':').
	start := 0
	isURL := false
	if i := strings.Index(dsn, "://"); i >= 0 {
		start, isURL = i+len("://"), true
	}
	if at := strings.LastIndex(dsn[start:], "@"); at >= 0 {
		if colon := strings.Index(dsn[start:start+at], ":"); colon >= 0 {
			spans = append(spans, [2]int{start + colon + 1, start + at})
		}
	}
	// password=VALUE: a URL's value ends at '&' or '#'; a keyword/value
	// string's at a space, or at its closing quote when quoted (\' and \\
	// are escapes).
	for _, m := range passwordKey.FindAllStringIndex(dsn, -1) {
		i, j := m[1], m[1]
		switch {
		case isURL:
			for j < len(dsn) && dsn[j] != '&' && dsn[j] != '#' {
				j++
			}
		case j < len(dsn) && dsn[j] == '\'':
			for j++; j < len(dsn) && dsn[j] != '\''; j++ {
				if dsn[j] == '\\' {
					j++
				}
			}
			j = min(j+1, len(dsn)) // the closing quote
		default:
			for j < len(dsn) && !isSpace(dsn[j]) {
				j++
			}
		}
		spans = append(spans, [2]int{i, j})
	}
	// In order, merged where they overlap, the empty ones left out.
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out [][2]int
	for _, s := range spans {
		switch {
		case s[0] >= s[1]:
		case len(out) > 0 && s[0] <= out[len(out)-1][1]:
			out[len(out)-1][1] = max(out[len(out)-1][1], s[1])
		default:
			out = append(out, s)
		}
	}
	return out
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// redact masks each of secrets in s.
func redact(s string, secrets []string) string {
	for _, p := range secrets {
		if p != "" {
			s = strings.ReplaceAll(s, p, masked)
		}
	}
	return s
}

// longestFirst sorts secrets for redact, longest first (so that no part of
// one is left when another is in it), without duplicates or empty ones.
func longestFirst(secrets []string) []string {
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.DeleteFunc(slices.Compact(secrets), func(s string) bool { return s == "" })
}
