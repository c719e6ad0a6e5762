package customresource

import (
	"encoding/json"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// hasDefaults finds a default wherever defaulting would apply one, and
// reports none only for schemas defaulting leaves objects alone with.
func TestHasDefaults(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}`, false},
		{`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":3}}}}}`, true},
		{`{"type":"object","properties":{"spec":{"type":"object","default":{}}}}`, true},
		{`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"object","properties":{"protocol":{"type":"string","default":"TCP"}}}}}}`, true},
		{`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string","default":"x"}}}}`, true},
		{`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`, false},
	} {
		var v1props apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal([]byte(tc.schema), &v1props); err != nil {
			t.Fatal(err)
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1props, &props, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		if got := hasDefaults(s); got != tc.want {
			t.Errorf("hasDefaults(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}

func TestHasNull(t *testing.T) {
	for _, tc := range []struct {
		in   interface{}
		want bool
	}{
		{map[string]interface{}{"a": "x", "b": []interface{}{int64(1), map[string]interface{}{"c": true}}}, false},
		{map[string]interface{}{"a": nil}, true},
		{map[string]interface{}{"a": []interface{}{"x", nil}}, true},
		{map[string]interface{}{"a": map[string]interface{}{"b": map[string]interface{}{"c": nil}}}, true},
	} {
		if got := hasNull(tc.in); got != tc.want {
			t.Errorf("hasNull(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
