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
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the JSON encoding of v, as json.Marshal(v) does.
func Marshal(v any) ([]byte, error) {
	return Append(make([]byte, 0, 1024), v)
}

// Append appends the JSON encoding of v to dst, as json.Marshal(v) would
// render it.
func Append(dst []byte, v any) ([]byte, error) {
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
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = Append(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Append(dst, e); err != nil {
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
