package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
)

// The fuzz targets feed hostile input to what parses it: every answer must
// be a value or a Status error, never a panic.

func fuzzResource(t testing.TB, plural string) *registry.Resource {
	reg := registry.New()
	builtin.Register(reg)
	for _, r := range reg.All() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no %s", plural)
	return nil
}

func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{vwcBody, `{}`, `[]`, `{"metadata":{"name":1}}`, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","name":"b"}}`, `{"webhooks":[{"rules":[{}]}]}`} {
		f.Add(seed)
	}
	res := fuzzResource(f, "validatingwebhookconfigurations")
	f.Fuzz(func(t *testing.T, body string) {
		obj, _, err := res.Strategy.Decode("v1", []byte(body))
		if err != nil {
			return
		}
		// A decoded object goes through the kind's rules without panicking.
		res.Strategy.Validate(t.Context(), obj)
	})
}

func FuzzApplyPatch(f *testing.F) {
	original := []byte(vwcBody)
	for _, seed := range []struct{ typ, patch string }{
		{string(types.JSONPatchType), `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}]`},
		{string(types.MergePatchType), `{"metadata":{"labels":{"a":"b"}}}`},
		{string(types.StrategicMergePatchType), `{"webhooks":[{"name":"b.example.com"}]}`},
		{string(types.StrategicMergePatchType), `{"$patch":"delete"}`},
	} {
		f.Add(seed.typ, seed.patch)
	}
	req := &resourceRequest{res: fuzzResource(f, "validatingwebhookconfigurations"), version: "v1"}
	f.Fuzz(func(t *testing.T, typ, patch string) {
		switch types.PatchType(typ) {
		case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		default:
			return
		}
		if _, err := applyPatch(req, types.PatchType(typ), original, []byte(patch)); err != nil {
			if _, ok := err.(apierrors.APIStatus); !ok {
				t.Fatalf("patch error is not a Status: %v", err)
			}
		}
	})
}

func FuzzContinueToken(f *testing.F) {
	f.Add(encodeContinue(continueToken{Rev: 5, Name: "a"}))
	f.Add("")
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ")
	f.Fuzz(func(t *testing.T, token string) {
		if _, err := decodeContinue(token); err != nil {
			if _, ok := err.(apierrors.APIStatus); !ok {
				t.Fatalf("continue error is not a Status: %v", err)
			}
		}
	})
}

// Selectors and every other query parameter arrive through a real list
// request: the answer is 200 or a 4xx Status.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{"labelSelector=a%3Db", "labelSelector=a+in+(x,y),!b", "fieldSelector=metadata.name%3Dx", "limit=1&continue=abc", "resourceVersion=1&resourceVersionMatch=Exact", "labelSelector=%21%21"} {
		f.Add(seed)
	}
	ts := newTestServer(f)
	f.Fuzz(func(t *testing.T, query string) {
		if strings.Contains(query, "watch") || strings.Contains(query, "resourceVersion") || strings.Contains(query, "timeoutSeconds") {
			return // long-running or waiting requests are not what this target is about
		}
		if _, err := url.Parse("http://kapi/?" + query); err != nil {
			return // no HTTP client can send it
		}
		code, body := call(t, ts, "GET", "/api/v1/namespaces?"+query, "", "")
		if code >= http.StatusInternalServerError {
			t.Fatalf("GET ?%s: %d %s", query, code, body)
		}
	})
}

// FuzzCompileCEL compiles hostile CEL where kapi compiles CEL at write
// time: a ValidatingAdmissionPolicy's validations, messageExpression,
// matchConditions and variables, and a CRD's x-kubernetes-validations. A
// bad expression is a field error, never a panic.
func FuzzCompileCEL(f *testing.F) {
	for _, seed := range []string{
		`object.metadata.name.startsWith("a")`,
		`self.all(x, self.all(y, x == y))`,
		`has(object.spec) && object.spec.replicas > params.max`,
		`variables.foo.size() < 10`,
		`"a" + 1`,
		`[1,2,3].map(x, x * 2).filter(y, y > 2).exists(z, z == 4)`,
		`quantity("1Gi").isGreaterThan(quantity("1Mi"))`,
		`(((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))`,
		`self.matches("^(a+)+$")`,
		`oldSelf == self`,
		`}`,
	} {
		f.Add(seed)
	}
	vap := fuzzResource(f, "validatingadmissionpolicies")
	crd := fuzzResource(f, "customresourcedefinitions")
	f.Fuzz(func(t *testing.T, expr string) {
		e, _ := json.Marshal(expr)
		policy := fmt.Sprintf(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
			"metadata":{"name":"p"},"spec":{"failurePolicy":"Fail",
			"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["namespaces"]}]},
			"variables":[{"name":"foo","expression":%[1]s}],
			"matchConditions":[{"name":"m","expression":%[1]s}],
			"validations":[{"expression":%[1]s,"messageExpression":%[1]s}],
			"auditAnnotations":[{"key":"k","valueExpression":%[1]s}]}}`, e)
		obj, _, err := vap.Strategy.Decode("v1", []byte(policy))
		if err != nil {
			t.Fatalf("the policy around %s does not decode: %v", e, err)
		}
		vap.Strategy.Validate(t.Context(), obj)

		definition := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
			"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
			"names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
			"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
			"properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":%[1]s,"messageExpression":%[1]s}],
			"properties":{"replicas":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}}}}}}}]}}`, e)
		obj, _, err = crd.Strategy.Decode("v1", []byte(definition))
		if err != nil {
			t.Fatalf("the CRD around %s does not decode: %v", e, err)
		}
		crd.Strategy.Validate(t.Context(), obj)
	})
}
