package main

import "syscall"

// zklock's own exit statuses. Any other status is COMMAND's, passed through
// (128+N when COMMAND was killed by signal N, as a shell reports it). A
// command may of course exit with one of these numbers itself; use -v or the
// message on stderr to tell them apart.
const (
	// exitOK: COMMAND exited 0 (or ls / version / --help succeeded).
	exitOK = 0
	// exitUsage (EX_USAGE): bad flags or arguments (a password on the
	// command line, a file of secrets or certificates that cannot be
	// read); nothing was done.
	exitUsage = 64
	// exitUnavailable (EX_UNAVAILABLE): the backend could not be reached
	// (ZooKeeper's connection timed out, or --timeout passed before zklock
	// connected, while ZooKeeper was out of reach, or after an attempt a
	// Redis, memcached or SQL server did not answer: an outage never
	// reads as a lock held; a Redis, memcached or SQL server
	// did not answer or refused the connection), refused zklock (its
	// credentials: authentication refused, or an ACL's NOAUTH or NOPERM;
	// over TLS, the certificates: the server's not trusted or for another
	// host name, zklock's refused) or failed while the lock was being
	// taken (on PostgreSQL and MySQL: the lock table missing and not
	// creatable, say); COMMAND did not run.
	exitUnavailable = 69
	// exitNoLock (EX_NOINPUT): zklock ls found no node at PATH (distinct
	// from a free lock, which exits 0 with nothing listed).
	exitNoLock = 66
	// exitSoftware (EX_SOFTWARE): internal error, e.g. COMMAND's status
	// could not be had (wait4 failed). Not expected to happen.
	exitSoftware = 70
	// exitTempFail (EX_TEMPFAIL): the lock was not taken: --timeout passed
	// while zklock waited for it (connected, its servers answering), or
	// --try found it held. COMMAND did not run and no node was left.
	exitTempFail = 75
	// exitQuiet: --try found the lock not granted to anyone because its
	// server (Redis, Redlock's servers, memcached) restarted less than a
	// TTL ago and may have forgotten a holder: its quiet period. Nobody may
	// hold it; trying again after a TTL can succeed. (Not in sysexits.h,
	// which has no code for it; distinct from 75, which says "held".)
	exitQuiet = 79
	// exitLockLost: the lock was lost while COMMAND ran (its node was
	// deleted, or the session was suspended or expired). COMMAND's process
	// group got SIGTERM, then SIGKILL after --grace. Its work may not have
	// been exclusive. (The number is EX_PROTOCOL's; it is used here because
	// it is distinct from every other status zklock gives.)
	exitLockLost = 76
	// exitIOErr (EX_IOERR): zklock watch could not write its output
	// (a full disk, say; a closed pipe ends it by SIGPIPE, as any filter).
	exitIOErr = 74
	// exitCannotExec: COMMAND was found but could not be run (not
	// executable, a directory, bad format), as a shell reports it.
	exitCannotExec = 126
	// exitNotFound: COMMAND was not found, as a shell reports it.
	exitNotFound = 127
	// exitSignalBase + N: zklock was stopped by signal N (SIGINT: 130,
	// SIGTERM: 143, SIGHUP: 129) while waiting for the lock, or COMMAND
	// was killed by signal N.
	exitSignalBase = 128
)

// signalExit is the status a shell gives for death by sig.
func signalExit(sig syscall.Signal) int { return exitSignalBase + int(sig) }

// waitStatusCode turns a wait status into an exit status, as a shell does.
func waitStatusCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return signalExit(ws.Signal())
	default:
		return exitSignalBase // not reached: only called for ended processes
	}
}
