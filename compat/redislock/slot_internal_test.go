package redislock

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The slots of known keys, as CLUSTER KEYSLOT gives them.
func TestKeySlot(t *testing.T) {
	for tag, slot := range map[string]int{"": 0, "foo": 12182, "bar": 5061, "123456789": 12739} {
		assert.Equal(t, slot, keySlot(tag), tag)
	}
}

// Every slot has a tag, in that slot.
func TestSlotTag(t *testing.T) {
	for _, slot := range []int{0, 1, 5061, 12182, slots - 1} {
		assert.Equal(t, slot, keySlot(slotTag(slot)))
	}
}
