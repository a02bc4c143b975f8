package redislock

import (
	"strconv"
	"sync"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// keySlot is the Redis Cluster slot of a key whose hash tag is tag (the
// text between its first braces): CRC16 (XMODEM) of the tag, modulo 16384.
func keySlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slots
}

// slotTags caches slotTag's answers.
var slotTags sync.Map // int -> string

// slotTag is a short hash tag (a decimal number) in slot: a grant channel
// tagged with it is in the slot of the locks it serves, as a script's
// SPUBLISH on Redis Cluster requires. About 16,384 CRCs the first time for
// each slot.
func slotTag(slot int) string {
	if tag, ok := slotTags.Load(slot); ok {
		return tag.(string)
	}
	for i := 0; ; i++ {
		if tag := strconv.Itoa(i); keySlot(tag) == slot {
			slotTags.Store(slot, tag)
			return tag
		}
	}
}
