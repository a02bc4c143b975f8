package redislock

// String names the lock in messages, as its errors do: "redislock orders".
func (l *Lock) String() string { return "redislock " + l.name }
