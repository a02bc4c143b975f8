package main

import (
	"fmt"
	"os"
)

// The environment variables that may hold the DSNs of the SQL backends:
// unlike a command line, the environment is not shown to other users.
const (
	dsnEnv       = "ZKLOCK_DSN"
	listenDSNEnv = "ZKLOCK_LISTEN_DSN"
)

// dsnSource is one DSN's three places: its flag (dsn), its file flag
// (dsn-file: the first line) and its environment variable.
type dsnSource struct {
	flag, fileFlag, env string
}

var (
	mainDSN   = dsnSource{flag: "dsn", fileFlag: "dsn-file", env: dsnEnv}
	listenDSN = dsnSource{flag: "listen-dsn", fileFlag: "listen-dsn-file", env: listenDSNEnv}
)

// resolve is the DSN from the place it was given (value and file are the
// flags' values, set tells which flags were given) and that place, for
// messages: "--dsn", "--dsn-file" or "$ZKLOCK_DSN"; from is "" when it is
// in none. A flag wins over the environment variable, as
// --redis-password-file wins over $REDISCLI_AUTH: a zklock run by
// another's COMMAND inherits its $ZKLOCK_DSN, and its own flags say what
// it wants. Both flags is a usage error naming them. A password in the
// flag is refused (command lines are public: ps), its message showing the
// DSN masked.
func (s dsnSource) resolve(value, file string, set map[string]bool) (dsn, from string, err error) {
	switch {
	case set[s.flag] && set[s.fileFlag]:
		return "", "", fmt.Errorf("--%s and --%s both give the DSN: give it one way", s.flag, s.fileFlag)
	case set[s.fileFlag]:
		dsn, err := readFirstLine("--"+s.fileFlag, file)
		return dsn, "--" + s.fileFlag, err
	case set[s.flag]:
		if len(dsnSecrets(value)) > 0 {
			return "", "", fmt.Errorf("--%s %s: a password on the command line is refused (anyone on this machine can read it with ps): "+
				"put the DSN in $%s or in a file named by --%s", s.flag, maskDSN(value), s.env, s.fileFlag)
		}
		return value, "--" + s.flag, nil
	}
	if env := os.Getenv(s.env); env != "" {
		return env, "$" + s.env, nil
	}
	return "", "", nil
}
