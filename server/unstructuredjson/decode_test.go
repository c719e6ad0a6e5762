package unstructuredjson

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
)

// decodeInputs cover every branch of the fast decoder and inputs it must
// leave to utiljson.
var decodeInputs = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a":-0,"b":0,"c":-12,"d":9223372036854775807,"e":-9223372036854775808}`,
	`{"big":9223372036854775808,"neg":-9223372036854775809,"huge":123456789012345678901234567890}`,
	`{"f":1.5,"g":-0.0,"h":1e3,"i":1E-7,"j":2.5e+10,"k":0.1,"l":1e308,"m":5e-324,"n":1.0}`,
	`{"t":true,"f":false,"n":null,"s":"","a":[],"o":{},"nested":[[[]],{"x":[1,"2",null]}]}`,
	`{"esc":"\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u65e5 \ud83d\ude00 \u2028"}`,
	`{"lone":"\ud800 x \udc00 y \ud800\u0041 \ud800\\"}`,
	"{\"utf8\":\"é 日本 🙂\",\"bad\":\"\xff \xc3 \xed\xa0\x80\"}",
	`{"dup":1,"dup":"two"}`, `{"a":{"x":1,"y":2,"x":[3]},"b":[{"k":1,"k":1}]}`, `{"a":1,"A":2}`, "{\"ws\" :\t[ 1 ,\n2 ]\r}",
	// Invalid or not an object: utiljson decides (an error, or its value).
	`[]`, `null`, `"s"`, `1`, ``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":[1,]}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":.5}`, `{"a":1e}`, `{"a":1e400}`, `{"a":tru}`, `{"a":nul}`, `{"a":"x` + "\x01" + `"}`, `{"a":"\x"}`, `{"a":"\u12"}`,
	`{"a":1} x`, `{"a":1}{}`, `{a:1}`, `{"a":NaN}`, `{"a":"unterminated}`,
	strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000), // as deep as encoding/json goes
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
	`{"a":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}`,
	`{"a":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`,
}

func TestUnmarshalMatchesUtiljson(t *testing.T) {
	for _, in := range decodeInputs {
		checkUnmarshal(t, []byte(in))
	}
}

// checkUnmarshal checks Unmarshal against utiljson, and that the fast path
// alone never accepts what utiljson refuses nor decodes differently.
func checkUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]any
	wantErr := utiljson.Unmarshal(data, &want)
	got, gotErr := Unmarshal(data)
	if (gotErr == nil) != (wantErr == nil) || (wantErr != nil && gotErr.Error() != wantErr.Error()) || !reflect.DeepEqual(got, want) {
		t.Fatalf("Unmarshal(%.200q) = %.300v, %v; utiljson: %.300v, %v", data, got, gotErr, want, wantErr)
	}
	d := decoder{data: data}
	if fast, ok := d.topObject(); ok && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("fast path on %.200q = %.300v; utiljson: %.300v, %v", data, fast, want, wantErr)
	}

	wantObj := map[string]any{}
	wantStrict, wantErr := sigsjson.UnmarshalStrict(data, &wantObj, sigsjson.DisallowDuplicateFields)
	gotObj, gotStrict, gotErr := UnmarshalStrict(data)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(gotStrict) != fmt.Sprint(wantStrict) || (wantErr == nil && !reflect.DeepEqual(gotObj, wantObj)) {
		t.Fatalf("UnmarshalStrict(%.200q) = %.300v, %v, %v; sigs.k8s.io/json: %.300v, %v, %v", data, gotObj, gotStrict, gotErr, wantObj, wantStrict, wantErr)
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, in := range decodeInputs {
		if len(in) < 1000 {
			f.Add([]byte(in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkUnmarshal(t, data)
	})
}

func BenchmarkUnmarshal(b *testing.B) {
	data, err := Marshal(widget(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUtiljsonUnmarshal(b *testing.B) {
	data, err := Marshal(widget(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := utiljson.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
}
