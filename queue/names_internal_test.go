package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The names, as Curator's priorityToString, epochToString and makeIdPath
// write them (Curator's own tests hold the same strings).
func TestNames(t *testing.T) {
	assert.Equal(t, "queue-100000000", priorityName(0))
	assert.Equal(t, "queue-10000000A", priorityName(10))
	assert.Equal(t, "queue-0FFFFFFFF", priorityName(-1))
	assert.Equal(t, "queue-080000000", priorityName(-1<<31))
	assert.Equal(t, "queue-17FFFFFFF", priorityName(1<<31-1))
	assert.Equal(t, "queue-|18BCFE56800|", delayName(time.UnixMilli(1700000000000)))
	assert.Equal(t, "queue-|0000000A|", delayName(time.UnixMilli(10)))
	assert.Equal(t, "queue-|a_b_c|", idName("a/b|c"))
}

func TestDueOf(t *testing.T) {
	for name, want := range map[string]int64{
		"queue-|18BCFE56800|0000000001": 1700000000000,
		"queue-|0000000A|0000000001":    10,
		"queue-0000000001":              0,
		"queue-||0000000001":            0,
		"queue-|zz|0000000001":          0,
	} {
		assert.Equal(t, want, dueOf(name), name)
	}
}

func TestSplitID(t *testing.T) {
	id, rest := splitID("queue-|job-7|0000000003")
	assert.Equal(t, "job-7", id)
	assert.Equal(t, "queue-0000000003", rest)
	id, rest = splitID("queue-0000000003")
	assert.Equal(t, "queue-0000000003", id)
	assert.Equal(t, "queue-0000000003", rest)
}

func TestRequeueName(t *testing.T) {
	assert.Equal(t, "queue-", requeueName("queue-0000000003"))
	assert.Equal(t, "queue-0FFFFFFFF", requeueName("queue-0FFFFFFFF0000000003"))
	assert.Equal(t, "queue-|x|", requeueName("queue-|x|0000000003"))
	assert.Equal(t, "queue-", requeueName("queue-"))
}

func TestOrdered(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		children []string
		want     []string
	}{
		{FIFO, []string{"queue-0000000002", "lock", "queue-0000000001"}, []string{"queue-0000000001", "queue-0000000002"}},
		{Priority, []string{
			priorityName(5) + "0000000001", priorityName(-3) + "0000000002",
			priorityName(0) + "0000000003", priorityName(-3) + "0000000004", priorityName(-1<<31) + "0000000005",
		}, []string{
			priorityName(-1<<31) + "0000000005", priorityName(-3) + "0000000002", priorityName(-3) + "0000000004",
			priorityName(0) + "0000000003", priorityName(5) + "0000000001",
		}},
		{Delay, []string{
			delayName(time.UnixMilli(3000)) + "0000000001", delayName(time.UnixMilli(1000)) + "0000000003",
			delayName(time.UnixMilli(1000)) + "0000000002", delayName(time.UnixMilli(0x10000)) + "0000000004",
		}, []string{
			delayName(time.UnixMilli(1000)) + "0000000002", delayName(time.UnixMilli(1000)) + "0000000003",
			delayName(time.UnixMilli(3000)) + "0000000001", delayName(time.UnixMilli(0x10000)) + "0000000004",
		}},
		{ID, []string{"queue-|z|0000000001", "queue-|a|0000000002", "other"}, []string{"queue-|z|0000000001", "queue-|a|0000000002"}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			assert.Equal(t, tc.want, ordered(tc.kind, tc.children))
		})
	}
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "Priority", Priority.String())
	assert.Equal(t, "Kind(9)", Kind(9).String())
	assert.Equal(t, "Drop", Drop.String())
	assert.Equal(t, "ErrorMode(7)", ErrorMode(7).String())
}
