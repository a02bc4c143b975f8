package counter

import (
	"context"
	"fmt"
)

// number is the engine read and written as an integer of size bytes.
type number[T int32 | int64] struct {
	e      *engine
	encode func(T) []byte
	decode func([]byte) (T, error)
}

func (n number[T]) get(ctx context.Context) (T, error) {
	if err := checkContext(ctx); err != nil {
		return 0, err
	}
	data, _, _, err := n.e.read(ctx)
	if err != nil {
		return 0, err
	}
	return n.decodeAt(data)
}

func (n number[T]) decodeAt(data []byte) (T, error) {
	v, err := n.decode(data)
	if err != nil {
		return 0, fmt.Errorf("counter: %s: %w", n.e.path, err)
	}
	return v, nil
}

// update applies f to the value, as a change (see engine.apply).
func (n number[T]) update(ctx context.Context, f func(T) T) (Result[T], error) {
	var r Result[T]
	_, _, err := n.e.apply(ctx, func(data []byte) ([]byte, error) {
		r = Result[T]{} // this try's, not an earlier one's
		v, err := n.decodeAt(data)
		if err != nil {
			return nil, err
		}
		r = Result[T]{v, f(v)}
		return n.encode(r.Post), nil
	})
	return r, err
}

func (n number[T]) compareAndSet(ctx context.Context, expected, value T) (Result[T], error) {
	r := Result[T]{Post: value}
	_, err := n.e.compareAndSet(ctx, func(data []byte) (bool, error) {
		v, err := n.decodeAt(data)
		r.Pre = v
		return err == nil && v == expected, err
	}, n.encode(value))
	return r, err
}
