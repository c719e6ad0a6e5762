package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// CRD validation ratcheting as kube's e2e test CRDValidationRatcheting
// (test/e2e/apimachinery/crd_validation_ratcheting.go) checks it: a schema
// made stricter after objects were stored does not refuse an apply that
// leaves their now-invalid correlatable fields unchanged (OpenAPI and CEL
// rules alike; a ratcheted CEL error is a Warning header), but it does
// refuse changed values, values in lists it cannot correlate (atomic and
// set lists) and transition rules (they use oldSelf), and a rule with
// optionalOldSelf sees no oldSelf on create.
func TestCustomResourceValidationRatcheting(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ratchets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: ratchets, singular: ratchet, kind: Ratchet}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	createCRD(t, k, crd)
	const path = "/apis/example.com/v1/namespaces/default/ratchets/"
	apply := func(name, body string) httpResult {
		t.Helper()
		labels := ""
		if l, ok := strings.CutPrefix(body, "labelled\n"); ok {
			labels, body = "  labels: {foo: bar}\n", l
		}
		y := "apiVersion: example.com/v1\nkind: Ratchet\nmetadata:\n  name: " + name + "\n" + labels + body
		return k.do(t, "PATCH", path+name+"?fieldManager=manager", []byte(y), "Content-Type: application/apply-patch+yaml")
	}
	// setSchema replaces the schema and waits until writes see it, as
	// kube's test does: by a sentinel field whose only value is new.
	generation := 0
	setSchema := func(schema string) {
		t.Helper()
		generation++
		props := &apiextensionsv1.JSONSchemaProps{}
		if err := yaml.UnmarshalStrict([]byte(schema), props); err != nil {
			t.Fatalf("schema: %v", err)
		}
		sentinel := fmt.Sprintf("sentinel-%d", generation)
		if props.Properties == nil {
			props.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		props.Properties["sentinel"] = apiextensionsv1.JSONSchemaProps{Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"` + sentinel + `"`)}}}
		stored, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored.Spec.Versions[0].Schema.OpenAPIV3Schema = props
		if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, stored, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tries := 0
		eventually(t, 10*time.Second, "the schema "+sentinel+" in use", func() (bool, error) {
			// A new value each time: an unchanged one would be ratcheted.
			tries++
			r := apply("sentinel", fmt.Sprintf("sentinel: nope-%d\n", tries))
			return r.Code == http.StatusUnprocessableEntity && strings.Contains(string(r.Body), sentinel), nil
		})
	}
	want := func(what string, r httpResult, code int, inMessage ...string) {
		t.Helper()
		mustCode(t, what, r, code)
		for _, s := range inMessage {
			if !strings.Contains(string(r.Body), s) {
				t.Errorf("%s: answer does not name %q: %.1000s", what, s, r.Body)
			}
		}
	}
	const correlatable = `field: foo
struct: {field: foo}
list: [{key: foo, field: foo}, {key: bar, field: foo}]
map: {foo: {field: foo}, bar: {field: foo}}
`
	const withNotFoo = `field: notfoo
struct: {field: notfoo}
list: [{key: foo, field: notfoo}, {key: bar, field: notfoo}]
map: {foo: {field: notfoo}, bar: {field: notfoo}}
`
	// rules puts rule on every correlatable field.
	rules := func(rule string, maxLength bool) string {
		s := strings.ReplaceAll(`type: object
properties:
  field: {type: string, maxLength: 5, x-kubernetes-validations: [RULE]}
  otherField: {type: string}
  struct:
    type: object
    properties:
      field: {type: string, maxLength: 5, x-kubernetes-validations: [RULE]}
      otherField: {type: string}
  list:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [key]
    items:
      type: object
      required: [key]
      properties:
        key: {type: string}
        field: {type: string, maxLength: 5, x-kubernetes-validations: [RULE]}
        otherField: {type: string}
  map:
    type: object
    additionalProperties:
      type: object
      properties:
        field: {type: string, maxLength: 5, x-kubernetes-validations: [RULE]}
        otherField: {type: string}
`, "RULE", rule)
		if !maxLength {
			s = strings.ReplaceAll(s, "maxLength: 5, ", "")
		}
		return s
	}
	// reset takes every rule away, so that new objects are stored as in
	// kube's test, where each case has a CRD of its own.
	reset := func() { setSchema("type: object\nx-kubernetes-preserve-unknown-fields: true\n") }
	celPaths := []string{"field:", "struct.field", "list[0].field", "list[1].field", "map[foo].field", "map[bar].field"}

	// Unchanged correlatable fields a CEL rule now fails: allowed, each
	// failure a warning; changed ones are refused.
	want("create a", apply("a", withNotFoo), http.StatusCreated)
	want("create b", apply("b", correlatable), http.StatusCreated)
	setSchema(rules(`{rule: "self == 'foo'"}`, false))
	r := apply("a", withNotFoo+"otherField: x\nlist: [{key: foo, field: notfoo}, {key: bar, field: notfoo}, {key: baz, field: foo}]\n")
	want("apply a leaving its invalid fields unchanged", r, http.StatusOK)
	if w := strings.Join(r.Header.Values("Warning"), "\n"); !strings.Contains(w, `field: Invalid value: \"string\": failed rule: self == 'foo'`) || !strings.Contains(w, "map[bar].field") {
		t.Errorf("apply a leaving its invalid fields unchanged: warnings %q, want the ratcheted rule failures", w)
	}
	want("apply b changing every field", apply("b", withNotFoo), http.StatusUnprocessableEntity, celPaths...)

	// Lists that cannot be correlated are validated whole.
	reset()
	want("create c", apply("c", "setArray: [foo, bar, baz]\natomicArray: [foo, bar, baz]\n"), http.StatusCreated)
	setSchema(`type: object
properties:
  atomicArray: {type: array, items: {type: string, enum: [notfoo, notbar, notbaz]}}
  setArray: {type: array, x-kubernetes-list-type: set, items: {type: string, enum: [notfoo, notbar, notbaz]}}
`)
	want("apply c adding to its lists", apply("c", "labelled\nsetArray: [foo, bar, baz, notfoo]\natomicArray: [foo, bar, baz, notfoo]\n"),
		http.StatusUnprocessableEntity, "atomicArray[0]", "setArray[0]")

	// OpenAPI rules (an enum neither value is in): unchanged fields
	// pass, changed ones are refused.
	reset()
	want("create d", apply("d", correlatable), http.StatusCreated)
	setSchema(strings.ReplaceAll(rules("", false), "x-kubernetes-validations: []", "enum: [bar]"))
	want("label d", apply("d", "labelled\n"+correlatable), http.StatusOK)
	want("apply d changing every field", apply("d", withNotFoo), http.StatusUnprocessableEntity,
		"field: Unsupported value", "struct.field", "list[0].field", "list[1].field", "map.foo.field", "map.bar.field")

	// Transition rules are not ratcheted.
	reset()
	want("apply b valid again", apply("b", correlatable), http.StatusOK)
	setSchema(rules(`{rule: "self != oldSelf"}`, true))
	want("label b", apply("b", "labelled\n"+correlatable), http.StatusUnprocessableEntity, "failed rule: self != oldSelf")

	// optionalOldSelf: no oldSelf on create, the rule holds on update.
	setSchema(rules(`{rule: "!oldSelf.hasValue() || self != oldSelf.value()", optionalOldSelf: true}`, true))
	want("create e", apply("e", correlatable), http.StatusCreated)
	want("label e", apply("e", "labelled\n"+correlatable), http.StatusUnprocessableEntity, celPaths...)
	want("apply e changing every field", apply("e", strings.ReplaceAll(correlatable, "field: foo", "field: new")), http.StatusOK)
}
