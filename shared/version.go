package shared

// Newer reports whether version b comes after version a of the same node,
// counting the wrap of ZooKeeper's int32 version from MaxInt32 to MinInt32
// (serial-number arithmetic, RFC 1982): b is newer when it is at most
// 2^31-1 writes ahead. A node is never written 2^31 times between two
// reads of one watcher, so the answer is exact in practice; Curator's
// plain b > a said "older" across the wrap and dropped the change
// (CURATOR-688).
func Newer(a, b int32) bool { return b-a > 0 } // int32 subtraction wraps, by the spec
