package queue

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is which of Curator's distributed queues a Queue is: it decides the
// names its producers give item nodes and the order its consumers take
// them in. Java and Go producers and consumers of one queue path must
// agree on it, as Curator's QueueBuilder.build*Queue calls must.
type Kind int

// The kinds, Curator's classes.
const (
	// FIFO is DistributedQueue: nodes queue-<seq10>, taken in sequence
	// order.
	FIFO Kind = iota
	// Priority is DistributedPriorityQueue: nodes queue-<s><%08X><seq10>,
	// s "1" for a priority >= 0 and "0" below, so that the names sort
	// lowest priority first, then in sequence order.
	Priority
	// Delay is DistributedDelayQueue: nodes queue-|<%08X epoch ms>|<seq10>,
	// none taken before its time, taken earliest due first.
	Delay
	// ID is DistributedIdQueue: nodes queue-|<id>|<seq10> ('/' and '|' in
	// the id written as '_'), taken in sequence order, removable by id.
	ID
)

func (k Kind) String() string {
	switch k {
	case FIFO:
		return "FIFO"
	case Priority:
		return "Priority"
	case Delay:
		return "Delay"
	case ID:
		return "ID"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// itemPrefix is the name Curator gives every item node before its
// variant's part (QUEUE_ITEM_NAME); children without it are foreign and
// left alone, as Curator leaves them.
const itemPrefix = "queue-"

// separator frames a Delay queue's due time and an ID queue's id.
const separator = "|"

// seqDigits is the length of the sequence ZooKeeper appends.
const seqDigits = 10

func priorityName(priority int32) string {
	// A negative priority's two's complement hex sorts above every
	// positive one: the leading digit puts the negatives first.
	sign := "1"
	if priority < 0 {
		sign = "0"
	}
	return fmt.Sprintf("%s%s%08X", itemPrefix, sign, uint32(priority))
}

func delayName(due time.Time) string {
	return fmt.Sprintf("%s%s%08X%s", itemPrefix, separator, due.UnixMilli(), separator)
}

func idName(id string) string {
	return itemPrefix + separator + fixID(id) + separator
}

// fixID is id as an ID queue's node name holds it: '/' would make a path
// and '|' end the id, so both are written '_' (Curator's fixId).
func fixID(id string) string {
	return strings.NewReplacer("/", "_", separator, "_").Replace(id)
}

// dueOf is a Delay item's due time in epoch milliseconds, 0 when the name
// has none (Curator's getEpoch: the hex between the last two separators).
func dueOf(name string) int64 {
	i2 := strings.LastIndex(name, separator)
	if i2 <= 0 {
		return 0
	}
	i1 := strings.LastIndex(name[:i2], separator)
	if i1 <= 0 || i2 <= i1+1 {
		return 0
	}
	v, err := strconv.ParseInt(name[i1+1:i2], 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// splitID is an ID item's id and its name without it (Curator's
// parseId); a name without two separators is its own id and order key,
// as in Curator.
func splitID(name string) (id, rest string) {
	i1 := strings.Index(name, separator)
	if i1 < 0 {
		return name, name
	}
	i2 := strings.Index(name[i1+1:], separator)
	if i2 < 0 {
		return name, name
	}
	i2 += i1 + 1
	return name[i1+1 : i2], name[:i1] + name[i2+1:]
}

// requeueName is the name without its sequence, for an item put back
// after its consumer failed. Curator puts a Priority or Delay item back
// as a plain queue- node (only the ID queue keeps its part): here every
// kind keeps its priority, due time or id.
func requeueName(name string) string {
	if len(name) > len(itemPrefix)+seqDigits {
		return name[:len(name)-seqDigits]
	}
	return itemPrefix
}

// ordered returns the item nodes among children (foreign nodes dropped)
// in the order kind's consumers take them.
func ordered(kind Kind, children []string) []string {
	items := make([]string, 0, len(children))
	for _, c := range children {
		if strings.HasPrefix(c, itemPrefix) {
			items = append(items, c)
		}
	}
	switch kind {
	case Delay:
		// Curator compares due times alone; ties go in name order here,
		// so that equal due times come out in sequence order.
		slices.SortFunc(items, func(a, b string) int {
			return cmp.Or(cmp.Compare(dueOf(a), dueOf(b)), strings.Compare(a, b))
		})
	case ID:
		// The id is left out: items come in sequence order whatever
		// their ids.
		slices.SortFunc(items, func(a, b string) int {
			_, ra := splitID(a)
			_, rb := splitID(b)
			return cmp.Or(strings.Compare(ra, rb), strings.Compare(a, b))
		})
	default:
		slices.Sort(items)
	}
	return items
}
