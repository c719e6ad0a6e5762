package unstructuredjson

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
)

// Unmarshal decodes a JSON object as utiljson.Unmarshal decodes it into a
// map[string]any: integers that fit as int64, other numbers as float64,
// the last of duplicate keys winning, invalid UTF-8 and lone surrogates as
// U+FFFD. It is for stored objects, which kapi itself rendered: what the
// fast path does not handle (an error, a top level that is not an object,
// extreme nesting) goes to utiljson.Unmarshal, so results and errors are
// always utiljson's.
func Unmarshal(data []byte) (map[string]any, error) {
	d := decoder{data: data}
	if v, ok := d.topObject(); ok {
		return v, nil
	}
	var out map[string]any
	err := utiljson.Unmarshal(data, &out)
	return out, err
}

// UnmarshalStrict decodes a request body as sigs.k8s.io/json's
// UnmarshalStrict with DisallowDuplicateFields decodes it into an empty
// map[string]any: strict names the fields given twice (the last value
// wins), err is a malformed body. Bodies with duplicate fields, and
// whatever else the fast path does not handle, go to sigs.k8s.io/json.
func UnmarshalStrict(data []byte) (obj map[string]any, strict []error, err error) {
	d := decoder{data: data}
	if v, ok := d.topObject(); ok && !d.duplicate {
		return v, nil, nil
	}
	obj = map[string]any{}
	strict, err = sigsjson.UnmarshalStrict(data, &obj, sigsjson.DisallowDuplicateFields)
	return obj, strict, err
}

// errFallback makes Unmarshal hand the input to utiljson.
var errFallback = errors.New("not on the fast path")

// maxDepth bounds nesting as encoding/json does (it fails deeper input).
const maxDepth = 10000

type decoder struct {
	data      []byte
	i         int
	duplicate bool // an object had a key twice
}

// topObject decodes the whole input as one object; ok is false when it is
// not one or is off the fast path.
func (d *decoder) topObject() (map[string]any, bool) {
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == '{' {
		if v, err := d.object(1); err == nil {
			if d.skipSpace(); d.i == len(d.data) {
				return v, true
			}
		}
	}
	return nil, false
}

func (d *decoder) skipSpace() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	d.skipSpace()
	if d.i >= len(d.data) {
		return nil, errFallback
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, errFallback
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.i < len(word) || string(d.data[d.i:d.i+len(word)]) != word {
		return errFallback
	}
	d.i += len(word)
	return nil
}

// object decodes {…} starting at d.data[d.i] == '{'.
func (d *decoder) object(depth int) (map[string]any, error) {
	if depth > maxDepth {
		return nil, errFallback
	}
	d.i++ // {
	m := map[string]any{}
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, errFallback
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, errFallback
		}
		d.i++
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		if _, seen := m[k]; seen {
			d.duplicate = true
		}
		m[k] = v
		if done, err := d.afterElement('}'); done || err != nil {
			return m, err
		}
	}
}

// array decodes […] starting at d.data[d.i] == '['.
func (d *decoder) array(depth int) ([]any, error) {
	if depth > maxDepth {
		return nil, errFallback
	}
	d.i++ // [
	a := []any{}
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if done, err := d.afterElement(']'); done || err != nil {
			return a, err
		}
	}
}

// afterElement consumes what follows an object member or array element:
// a comma (done is false) or the closing bracket (done is true).
func (d *decoder) afterElement(closing byte) (done bool, err error) {
	d.skipSpace()
	if d.i < len(d.data) {
		switch d.data[d.i] {
		case ',':
			d.i++
			return false, nil
		case closing:
			d.i++
			return true, nil
		}
	}
	return false, errFallback
}

// number decodes a JSON number: an int64 when it has no fraction (no
// '.') and fits, else a float64.
func (d *decoder) number() (any, error) {
	start := d.i
	if d.data[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.data) && d.data[d.i] == '0':
		d.i++
	case d.i < len(d.data) && d.data[d.i] >= '1' && d.data[d.i] <= '9':
		d.digits()
	default:
		return nil, errFallback
	}
	fraction := false
	if d.i < len(d.data) && d.data[d.i] == '.' {
		fraction = true
		d.i++
		if d.digits() == 0 {
			return nil, errFallback
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, errFallback
		}
	}
	s := string(d.data[start:d.i])
	if !fraction {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, errFallback // out of range: utiljson's error
	}
	return f, nil
}

func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// string decodes "…" starting at d.data[d.i] == '"'.
func (d *decoder) string() (string, error) {
	d.i++ // "
	start := d.i
	// The common case: no escapes, valid UTF-8, taken as it is.
	for d.i < len(d.data) {
		c := d.data[d.i]
		if plainASCII[c] {
			d.i++
			continue
		}
		switch {
		case c == '"':
			s := string(d.data[start:d.i])
			d.i++
			return s, nil
		case c == '\\' || c < 0x20:
			return d.escapedString(start)
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, size := utf8.DecodeRune(d.data[d.i:])
			if r == utf8.RuneError && size == 1 {
				return d.escapedString(start)
			}
			d.i += size
		}
	}
	return "", errFallback
}

// plainASCII marks the bytes a string holds as they are: ASCII but
// control characters, quote and backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapedString decodes a string with escapes or invalid UTF-8 from
// d.data[start:], the byte after its opening quote.
func (d *decoder) escapedString(start int) (string, error) {
	d.i = start
	buf := make([]byte, 0, 64)
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), nil
		case c < 0x20:
			return "", errFallback // invalid in JSON
		case c == '\\':
			if d.i+1 >= len(d.data) {
				return "", errFallback
			}
			e := d.data[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", errFallback
				}
				if utf16.IsSurrogate(r) {
					// A pair makes one rune; a lone half is U+FFFD.
					if lo, ok := d.lowSurrogate(r); ok {
						r = lo
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", errFallback
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.data[d.i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, d.data[d.i:d.i+size]...)
			}
			d.i += size
		}
	}
	return "", errFallback
}

// hex4 reads the four hex digits after \u.
func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// lowSurrogate combines the high surrogate hi with a \uXXXX low
// surrogate that follows it, consuming it; ok is false (nothing
// consumed) when none follows.
func (d *decoder) lowSurrogate(hi rune) (rune, bool) {
	if len(d.data)-d.i < 6 || d.data[d.i] != '\\' || d.data[d.i+1] != 'u' {
		return 0, false
	}
	save := d.i
	d.i += 2
	lo, ok := d.hex4()
	if !ok {
		d.i = save
		return 0, false
	}
	if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
		return r, true
	}
	d.i = save
	return 0, false
}
