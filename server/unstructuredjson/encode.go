// Package unstructuredjson encodes and decodes unstructured values — maps
// with string keys, slices, strings, numbers, booleans and nil, as
// unstructured objects hold them — with the results of encoding/json's
// Marshal and of utiljson.Unmarshal, byte for byte and value for value,
// without reflection.
//
// encoding/json walks a map[string]any by reflection, allocating for every
// key and value it visits, and decodes after a separate validating scan;
// objects are encoded and decoded on every write, read, list and watch
// event, where that was a tenth of a create's allocations and a third of a
// LIST's CPU. Whatever the fast paths do not handle goes to encoding/json
// and utiljson, so the results are always theirs.
package unstructuredjson

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Marshal returns the JSON encoding of v, as json.Marshal(v) does.
func Marshal(v any) ([]byte, error) {
	// Encoded into a reused scratch buffer and copied out at its size: one
	// allocation of the result's length instead of a buffer grown by
	// doubling, and of the maps' sorted keys.
	e := encoders.Get().(*encoder)
	data, err := e.append(e.buf[:0], v)
	if err != nil {
		e.keys = e.keys[:0] // an error leaves the stack as it was mid-way
		encoders.Put(e)
		return nil, err
	}
	out := bytes.Clone(data)
	if cap(data) <= maxScratch {
		e.buf = data
		encoders.Put(e)
	}
	return out, nil
}

// encoder holds scratch space reused across Marshal calls.
type encoder struct {
	buf  []byte
	keys []string // the sorted keys of the maps being encoded, a stack
}

// encoders are Marshal's; one whose buffer grew past maxScratch (a huge
// object) is left to the garbage collector.
var encoders = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 4096)} }}

const maxScratch = 1 << 20

func (e *encoder) append(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return marshalled(dst, v) // encoding/json's error
		}
		return appendFloat(dst, v), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		// This map's keys go on top of the stack; nested maps' go above
		// them (keys stays valid if the stack moves) and are gone again
		// when the map is done.
		base := len(e.keys)
		for k := range v {
			e.keys = append(e.keys, k)
		}
		keys := e.keys[base:]
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = e.append(dst, v[k]); err != nil {
				return nil, err
			}
		}
		e.keys = e.keys[:base]
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, elem := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.append(dst, elem); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	default:
		return marshalled(dst, v)
	}
}

// marshalled appends what encoding/json makes of v.
func marshalled(dst []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, data...), nil
}

// appendFloat renders a finite float as encoding/json does: like
// JavaScript's number to string, plain decimal between 1e-6 and 1e21,
// otherwise an exponent without a leading zero.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7
		if n := len(dst) - start; n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks the ASCII bytes encoding/json writes as they are: all
// but control characters, quote, backslash, <, > and &.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString quotes s as encoding/json does with its default HTML
// escaping: control characters, quote, backslash, <, > and & escaped,
// invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	plain := 0 // s[plain:i] is still to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[plain:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			plain = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[plain:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[plain:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		plain = i
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"')
}
