package server

import (
	"strings"
	"testing"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/builtin"
)

// The type checker's schema resolver resolves every kind of the built-in
// scheme, as kube's integration test TestBuiltinResolution requires of the
// definitions resolver kube's controller uses (with its skips: metav1
// aliases, options, events, lists and private kinds).
func TestPolicyTypeCheckerResolvesBuiltinKinds(t *testing.T) {
	r := openapi.BuiltinSchemaResolver(builtin.Scheme)
	for gvk := range builtin.Scheme.AllKnownTypes() {
		switch {
		case gvk.Kind == "APIGroup" || gvk.Kind == "APIGroupList" || gvk.Kind == "APIVersions",
			strings.HasSuffix(gvk.Kind, "Options") || strings.HasSuffix(gvk.Kind, "Event"),
			gvk.Kind == "SerializedReference" || gvk.Kind == "List" || gvk.Kind == "RangeAllocation" || gvk.Kind == "PodStatusResult",
			gvk.Version == "__internal":
			continue
		}
		if _, err := r.ResolveSchema(gvk); err != nil {
			t.Errorf("cannot resolve %v: %v", gvk, err)
		}
	}
}
