package queue

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Curator's ItemSerializer envelope, the data of a DistributedQueue's
// node: a 4-byte big-endian version, then per item an opcode byte, a
// 4-byte big-endian signed length and the item's bytes, then the end
// opcode. One node carries one item (put) or several (putMulti).
const (
	frameVersion    uint32 = 0x00010001
	frameItemOpcode byte   = 0x01
	frameEOFOpcode  byte   = 0x02
)

// encodeItems frames items as Curator's ItemSerializer does.
func encodeItems(items [][]byte) ([]byte, error) {
	n := 4 + 1
	for i, it := range items {
		if len(it) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: item %d is %d bytes, more than a signed 32-bit length", ErrInvalidArgument, i, len(it))
		}
		n += 1 + 4 + len(it)
	}
	out := make([]byte, 0, n)
	out = binary.BigEndian.AppendUint32(out, frameVersion)
	for _, it := range items {
		out = append(out, frameItemOpcode)
		out = binary.BigEndian.AppendUint32(out, uint32(len(it)))
		out = append(out, it...)
	}
	return append(out, frameEOFOpcode), nil
}

// decodeItems reads Curator's envelope. It is strict where Curator is:
// another version, an unknown opcode, a negative length or data that ends
// before the end opcode is ErrCorrupt (Curator logs "Corrupted queue item"
// and drops the node); bytes after the end opcode are ignored, as Curator
// ignores them.
func decodeItems(data []byte) ([][]byte, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the version", ErrCorrupt, len(data))
	}
	if v := binary.BigEndian.Uint32(data); v != frameVersion {
		return nil, fmt.Errorf("%w: version %#08x, want %#08x", ErrCorrupt, v, frameVersion)
	}
	rest := data[4:]
	var items [][]byte
	for {
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: no end opcode after %d items", ErrCorrupt, len(items))
		}
		op := rest[0]
		rest = rest[1:]
		switch op {
		case frameEOFOpcode:
			return items, nil
		case frameItemOpcode:
		default:
			return nil, fmt.Errorf("%w: opcode %#02x after %d items, want %#02x or %#02x", ErrCorrupt, op, len(items), frameItemOpcode, frameEOFOpcode)
		}
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: item %d: length cut short", ErrCorrupt, len(items))
		}
		size := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if size < 0 || int(size) > len(rest) {
			return nil, fmt.Errorf("%w: item %d: length %d, %d bytes left", ErrCorrupt, len(items), size, len(rest))
		}
		items = append(items, rest[:size:size])
		rest = rest[size:]
	}
}
