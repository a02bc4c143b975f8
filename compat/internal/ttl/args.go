package ttl

import "reflect"

// IsNil reports whether v is nil, or an interface holding a nil pointer
// (a typed nil: var c *redis.Client; New(c)), which constructors refuse:
// its first use would panic, perhaps inside a library goroutine.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
