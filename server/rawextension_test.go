package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// deviceClassWithParameters is a DeviceClass whose one opaque
// configuration has params as its parameters, written into the body as
// they are given.
func deviceClassWithParameters(name, params string) string {
	return `{"apiVersion":"resource.k8s.io/v1beta2","kind":"DeviceClass","metadata":{"name":"` + name + `"},` +
		`"spec":{"config":[{"opaque":{"driver":"dra.example.com","parameters":` + params + `}}]}}`
}

// spacedParameters is a parameters object of exactly size bytes as
// written, of which pad are whitespace: compacted, size-pad bytes.
func spacedParameters(size, pad int) string {
	const head, mid, tail = `{"b":"`, `", "a":1`, `}`
	fill := size - pad - len(head) - len(mid) + 1 - len(tail) // the space after the comma is counted in pad
	return head + strings.Repeat("x", fill) + `",` + strings.Repeat(" ", pad) + `"a":1` + tail
}

// The size limit of opaque parameters (10 KiB) holds for their bytes as
// the client wrote them, as kube-apiserver measures the RawExtension it
// decoded: whitespace counts, also when the parameters compacted fit.
func TestDeviceClassParametersMeasuredAsSent(t *testing.T) {
	ts := newTestServer(t)
	const max = 10240
	tooLong := []metav1.StatusCause{{
		Type:    "FieldValueTooLong",
		Message: "Too long: may not be more than 10240 bytes",
		Field:   "spec.config[0].opaque.parameters",
	}}
	checkTooLong := func(what string, code int, body string, causes []metav1.StatusCause) {
		t.Helper()
		var st metav1.Status
		_ = json.Unmarshal([]byte(body), &st)
		wantMsg := `DeviceClass.resource.k8s.io "` + what + `" is invalid: spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes`
		if code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != wantMsg ||
			st.Details == nil || !reflect.DeepEqual(st.Details.Causes, causes) {
			t.Errorf("%s: %d %.600s; want 422 Invalid, %q, causes %v", what, code, body, wantMsg, causes)
		}
	}

	// Over the limit by one byte of whitespace: refused, though its
	// compacted form is 1,000 bytes shorter.
	params := spacedParameters(max+1, 1001)
	if len(params) != max+1 {
		t.Fatalf("parameters of %d bytes", len(params))
	}
	code, body := call(t, ts, http.MethodPost, deviceClasses, "application/json", deviceClassWithParameters("spaced", params))
	checkTooLong("spaced", code, body, tooLong)

	// At the limit with its whitespace: accepted.
	if code, body := call(t, ts, http.MethodPost, deviceClasses, "application/json", deviceClassWithParameters("at-limit", spacedParameters(max, 1000))); code != http.StatusCreated {
		t.Errorf("parameters of %d bytes as sent: %d %.300s, want 201", max, code, body)
	}

	// An update that only spaces out parameters that fit, past the limit,
	// is refused as kube-apiserver refuses it (its create rules, then its
	// update rules, which find the parameters changed).
	compact := strings.ReplaceAll(spacedParameters(max-1000, 1), " ", "")
	if code, body := call(t, ts, http.MethodPost, deviceClasses, "application/json", deviceClassWithParameters("respaced", compact)); code != http.StatusCreated {
		t.Fatalf("create respaced: %d %.300s", code, body)
	}
	code, body = call(t, ts, http.MethodPut, deviceClasses+"/respaced", "application/json", deviceClassWithParameters("respaced", spacedParameters(max+1, 1002)))
	checkTooLong("respaced", code, body, append(tooLong, tooLong...))

	// Parameters within the limit sent again as they were: no change, as
	// in kube-apiserver, whose stored bytes are those sent.
	sent := spacedParameters(max, 1000)
	code, body = call(t, ts, http.MethodPut, deviceClasses+"/at-limit", "application/json", deviceClassWithParameters("at-limit", sent))
	var got metav1.PartialObjectMetadata
	_ = json.Unmarshal([]byte(body), &got)
	if code != http.StatusOK || got.Generation != 1 {
		t.Errorf("the same parameters sent again: %d generation %d %.300s, want 200, generation 1", code, got.Generation, body)
	}
}

// A protobuf body whose opaque parameters are not JSON is bad input: a
// 400 Status, not the 500 of a failed re-encoding.
func TestDeviceClassProtobufParametersNotJSON(t *testing.T) {
	ts := newTestServer(t)
	class := &resourcev1beta2.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1beta2", Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "not-json"},
		Spec: resourcev1beta2.DeviceClassSpec{Config: []resourcev1beta2.DeviceClassConfiguration{{
			DeviceConfiguration: resourcev1beta2.DeviceConfiguration{Opaque: &resourcev1beta2.OpaqueDeviceConfiguration{
				Driver: "dra.example.com", Parameters: runtime.RawExtension{Raw: []byte("not json")},
			}},
		}}},
	}
	var body bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(class, &body); err != nil {
		t.Fatal(err)
	}
	code, out := call(t, ts, http.MethodPost, deviceClasses, "application/vnd.kubernetes.protobuf", body.String())
	var st metav1.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest ||
		!strings.Contains(st.Message, "not JSON") {
		t.Errorf("protobuf parameters that are not JSON: %d %.400s, want a 400 BadRequest Status", code, out)
	}
}
