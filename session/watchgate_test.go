package session

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// frame is a length-prefixed frame of body.
func frame(body ...[]byte) []byte {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// On a reconnection, the bytes after the connect response wait until the
// setWatches request has been written (go-zookeeper's sendSetWatches has
// then read the zxid its receive loop writes); without one, until
// setWatchesWait. A first connection does not wait.
func TestWatchGate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reconnection bool
		setWatches   bool
	}{
		{"reconnection with watches", true, true},
		{"reconnection without watches", true, false},
		{"first connection", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			connectResp := frame(be32(0), be32(6000), []byte{0, 0, 0, 0, 0, 0, 0, 1}, be32(16), make([]byte, 16))
			reply := frame(be32(1), make([]byte, 8), be32(0)) // xid 1, zxid, err
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = c.Write(append(append([]byte{}, connectResp...), reply...)) // both at once
				_, _ = io.Copy(io.Discard, c)
			}()
			l := &liveness{requested: 6 * time.Second}
			l.servers.Store(1)
			conn, err := l.dial("tcp", ln.Addr().String(), "", time.Second, tc.reconnection)
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write(frame(make([]byte, 44))) // the connect request
			require.NoError(t, err)
			got := make([]byte, len(connectResp))
			_, err = io.ReadFull(conn, got)
			require.NoError(t, err, "the connect response is never held")

			read := make(chan time.Time, 1)
			go func() {
				_, _ = io.ReadFull(conn, make([]byte, len(reply)))
				read <- time.Now()
			}()
			if tc.setWatches {
				select {
				case <-read:
					t.Fatal("a reply was read before the setWatches request was sent")
				case <-time.After(20 * time.Millisecond):
				}
				_, err = conn.Write(frame(be32(7), be32(opSetWatches), make([]byte, 20)))
				require.NoError(t, err)
			}
			select {
			case <-read: // released by the request, by setWatchesWait, or not held
			case <-time.After(10 * time.Second):
				t.Fatal("the reply was never read")
			}
		})
	}
}
