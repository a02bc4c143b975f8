// Package cuttest holds the test of the promise on a real ensemble: a
// holder whose server is a follower or an observer cut off from the rest
// of the ensemble, with ZooKeeper's default timing, is told before a
// client on the majority side is granted its lock, for every ZooKeeper
// lock recipe, under both error policies, at session timeouts of 6 s and
// 15 s, and the margin its trace reports is never larger than the real
// one. It has no API: its test is the package.
package cuttest
