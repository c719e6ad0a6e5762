package unstructuredjson

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	kjson "sigs.k8s.io/json"
)

// values covers every case of the encoder and the corners of encoding/json's
// string and number rendering.
var values = []any{
	nil, true, false, "", "plain", int64(0), int64(-42), int64(math.MaxInt64), int64(math.MinInt64), 7,
	0.0, math.Copysign(0, -1), 1.5, -2.25, 1e20, 1e21, 123456789e15, 1e-6, 1e-7, 9.999e-7, 5e-324, math.MaxFloat64, 0.1, 100.0, 1e-10,
	"quote \" backslash \\ slash /", "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"é ü 日本 🙂", "\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", string([]byte{0xf0, 0x9f}),
	map[string]any{}, map[string]any(nil), []any{}, []any(nil),
	map[string]any{"b": int64(1), "a": []any{"x", 2.5, nil, map[string]any{"<": ">"}}, "A": true, "aa": map[string]any{}, "\u2028": "\xff"},
	[]any{[]any{[]any{}}, map[string]any{"k": []any{int64(1), "2"}}},
	json.Number("12.50"), []string{"typed", "slice"}, map[string]string{"typed": "map"}, int32(5), json.RawMessage(`{ "raw" : 1 }`),
	map[string]any{"nested": []string{"typed"}, "n": int32(-1)},
}

func TestMatchesEncodingJSON(t *testing.T) {
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%#v): %v", v, err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Errorf("Marshal(%#v): %v", v, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Marshal(%#v)\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestUnsupportedValues(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"a": []any{math.Inf(-1)}}, make(chan int)} {
		_, want := json.Marshal(v)
		_, got := Marshal(v)
		if got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("Marshal(%#v): error %v, json.Marshal's %v", v, got, want)
		}
	}
}

// FuzzMarshal decodes arbitrary JSON as kapi decodes request bodies and
// checks that Marshal renders the result as encoding/json does.
func FuzzMarshal(f *testing.F) {
	for _, v := range values {
		if data, err := json.Marshal(v); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"}},"spec":{"n":1.5e300,"m":-0.000001,"s":"\u00e9\ud83d\ude00"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
			return
		}
		want, werr := json.Marshal(v)
		got, gerr := Marshal(v)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("input %q:\n got %s (%v)\nwant %s (%v)", data, got, gerr, want, werr)
		}
	})
}

// widget is a custom resource as the benchmarks create it, decoded.
func widget(b *testing.B) map[string]any {
	var v map[string]any
	data := []byte(`{"apiVersion":"bench.kapi.dev/v1","kind":"Widget","metadata":{"name":"w-1","namespace":"default","uid":"6c5e0f0e-3d6b-4b8e-9a43-8f0f3b1c2d4e","resourceVersion":"12345","generation":1,"creationTimestamp":"2026-11-22T03:00:00Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"bench.kapi.dev/v1","time":"2026-11-22T03:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:color":{},"f:data":{},"f:size":{},"f:tags":{}}}}]},"spec":{"size":3,"color":"blue","tags":["bench","kapi","widget"],"data":"` + string(bytes.Repeat([]byte("x"), 1000)) + `"}}`)
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkMarshal(b *testing.B) {
	v := widget(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSONMarshal(b *testing.B) {
	v := widget(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
