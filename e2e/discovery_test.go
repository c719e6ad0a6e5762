package e2e

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

func decodeInto(t testing.TB, r httpResult, v any) {
	t.Helper()
	if r.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", r.Code, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, r.Body)
	}
}

func groupVersions(g metav1.APIGroup) []string {
	var out []string
	for _, v := range g.Versions {
		out = append(out, v.GroupVersion)
	}
	return out
}

func findResource(list *metav1.APIResourceList, name string) *metav1.APIResource {
	for i := range list.APIResources {
		if list.APIResources[i].Name == name {
			return &list.APIResources[i]
		}
	}
	return nil
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)

	t.Run("/api", func(t *testing.T) {
		var v metav1.APIVersions
		decodeInto(t, k.do(t, "GET", "/api", nil), &v)
		if v.Kind != "APIVersions" || strings.Join(v.Versions, ",") != "v1" {
			t.Errorf("/api: %+v", v)
		}
	})

	t.Run("/apis", func(t *testing.T) {
		var l metav1.APIGroupList
		decodeInto(t, k.do(t, "GET", "/apis", nil), &l)
		if l.Kind != "APIGroupList" {
			t.Errorf("kind %q", l.Kind)
		}
		groups := map[string]metav1.APIGroup{}
		for _, g := range l.Groups {
			groups[g.Name] = g
		}
		for name, want := range map[string]struct {
			versions  []string
			preferred string
		}{
			"admissionregistration.k8s.io": {[]string{"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1"}, "admissionregistration.k8s.io/v1"},
			"apiextensions.k8s.io":         {[]string{"apiextensions.k8s.io/v1"}, "apiextensions.k8s.io/v1"},
		} {
			g, ok := groups[name]
			if !ok {
				t.Errorf("/apis lacks %s", name)
				continue
			}
			if strings.Join(groupVersions(g), ",") != strings.Join(want.versions, ",") || g.PreferredVersion.GroupVersion != want.preferred {
				t.Errorf("%s: versions %v preferred %q, want %v %q", name, groupVersions(g), g.PreferredVersion.GroupVersion, want.versions, want.preferred)
			}
		}
		if g, ok := groups["resource.k8s.io"]; !ok || !contains(groupVersions(g), "resource.k8s.io/v1beta2") {
			t.Errorf("/apis: resource.k8s.io lacks v1beta2: %+v", g)
		}
		if _, ok := groups[""]; ok {
			t.Errorf("/apis lists the core group")
		}

		var g metav1.APIGroup
		decodeInto(t, k.do(t, "GET", "/apis/admissionregistration.k8s.io", nil), &g)
		if g.Name != "admissionregistration.k8s.io" || g.PreferredVersion.Version != "v1" || len(g.Versions) != 2 {
			t.Errorf("/apis/admissionregistration.k8s.io: %+v", g)
		}
		expectPlainNotFound(t, k.do(t, "GET", "/apis/nope.example.com", nil))
	})

	t.Run("resource lists", func(t *testing.T) {
		type res struct {
			name, kind, singular string
			shortNames           []string
			categories           []string
			verbs                []string
		}
		for path, want := range map[string][]res{
			"/api/v1": {
				// Namespaces have no deletecollection in kube-apiserver.
				{name: "namespaces", kind: "Namespace", singular: "namespace", shortNames: []string{"ns"}, verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
				{name: "namespaces/status", kind: "Namespace", verbs: []string{"get", "patch", "update"}},
				{name: "namespaces/finalize", kind: "Namespace", verbs: []string{"update"}},
			},
			"/apis/apiextensions.k8s.io/v1": {
				{name: "customresourcedefinitions", kind: "CustomResourceDefinition", singular: "customresourcedefinition", shortNames: []string{"crd", "crds"}, categories: []string{"api-extensions"}, verbs: allVerbs},
				{name: "customresourcedefinitions/status", kind: "CustomResourceDefinition", verbs: []string{"get", "patch", "update"}},
			},
			"/apis/admissionregistration.k8s.io/v1": {
				{name: "mutatingwebhookconfigurations", kind: "MutatingWebhookConfiguration", singular: "mutatingwebhookconfiguration", categories: []string{"api-extensions"}, verbs: allVerbs},
				{name: "validatingwebhookconfigurations", kind: "ValidatingWebhookConfiguration", singular: "validatingwebhookconfiguration", categories: []string{"api-extensions"}, verbs: allVerbs},
				{name: "validatingadmissionpolicies", kind: "ValidatingAdmissionPolicy", singular: "validatingadmissionpolicy", categories: []string{"api-extensions"}, verbs: allVerbs},
				{name: "validatingadmissionpolicies/status", kind: "ValidatingAdmissionPolicy", verbs: []string{"get", "patch", "update"}},
				{name: "validatingadmissionpolicybindings", kind: "ValidatingAdmissionPolicyBinding", singular: "validatingadmissionpolicybinding", categories: []string{"api-extensions"}, verbs: allVerbs},
			},
			"/apis/admissionregistration.k8s.io/v1beta1": {
				{name: "validatingadmissionpolicies", kind: "ValidatingAdmissionPolicy", singular: "validatingadmissionpolicy", categories: []string{"api-extensions"}, verbs: allVerbs},
				{name: "validatingadmissionpolicies/status", kind: "ValidatingAdmissionPolicy", verbs: []string{"get", "patch", "update"}},
				{name: "validatingadmissionpolicybindings", kind: "ValidatingAdmissionPolicyBinding", singular: "validatingadmissionpolicybinding", categories: []string{"api-extensions"}, verbs: allVerbs},
			},
			"/apis/resource.k8s.io/v1beta2": {
				{name: "deviceclasses", kind: "DeviceClass", singular: "deviceclass", verbs: allVerbs},
			},
		} {
			var l metav1.APIResourceList
			decodeInto(t, k.do(t, "GET", path, nil), &l)
			gv := strings.TrimPrefix(strings.TrimPrefix(path, "/apis/"), "/api/")
			if l.Kind != "APIResourceList" || l.GroupVersion != gv {
				t.Errorf("%s: kind %q groupVersion %q", path, l.Kind, l.GroupVersion)
			}
			for _, w := range want {
				r := findResource(&l, w.name)
				if r == nil {
					t.Errorf("%s lacks %s", path, w.name)
					continue
				}
				if r.Kind != w.kind || r.Namespaced || r.SingularName != w.singular ||
					strings.Join(r.ShortNames, ",") != strings.Join(w.shortNames, ",") ||
					strings.Join(r.Categories, ",") != strings.Join(w.categories, ",") ||
					strings.Join(sortedCopy(r.Verbs), ",") != strings.Join(w.verbs, ",") {
					t.Errorf("%s %s: %+v, want %+v", path, w.name, *r, w)
				}
			}
		}
		expectPlainNotFound(t, k.do(t, "GET", "/apis/admissionregistration.k8s.io/v7", nil))
	})

	t.Run("aggregated", func(t *testing.T) {
		const mediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		r := k.do(t, "GET", "/apis", nil, "Accept: "+mediaType+",application/json")
		if ct := r.Header.Get("Content-Type"); ct != mediaType {
			t.Errorf("Content-Type %q, want %q", ct, mediaType)
		}
		var l apidiscoveryv2.APIGroupDiscoveryList
		decodeInto(t, r, &l)
		if l.Kind != "APIGroupDiscoveryList" || l.APIVersion != "apidiscovery.k8s.io/v2" {
			t.Errorf("kind %q apiVersion %q", l.Kind, l.APIVersion)
		}
		groups := map[string]apidiscoveryv2.APIGroupDiscovery{}
		for _, g := range l.Items {
			groups[g.Name] = g
		}
		adm, ok := groups["admissionregistration.k8s.io"]
		if !ok {
			t.Fatalf("no admissionregistration.k8s.io in %s", r.Body)
		}
		var versions []string
		for _, v := range adm.Versions {
			versions = append(versions, v.Version)
		}
		// Preferred version first.
		if strings.Join(versions, ",") != "v1,v1beta1" {
			t.Errorf("admissionregistration.k8s.io versions %v, want [v1 v1beta1]", versions)
		}
		found := false
		for _, res := range adm.Versions[0].Resources {
			if res.Resource != "validatingadmissionpolicies" {
				continue
			}
			found = true
			if res.Scope != apidiscoveryv2.ScopeCluster || res.ResponseKind == nil || res.ResponseKind.Kind != "ValidatingAdmissionPolicy" || res.SingularResource != "validatingadmissionpolicy" {
				t.Errorf("validatingadmissionpolicies: %+v", res)
			}
			if len(res.Subresources) != 1 || res.Subresources[0].Subresource != "status" {
				t.Errorf("validatingadmissionpolicies subresources %+v", res.Subresources)
			}
		}
		if !found {
			t.Errorf("aggregated v1 lacks validatingadmissionpolicies")
		}
		for _, g := range []string{"apiextensions.k8s.io", "resource.k8s.io"} {
			if _, ok := groups[g]; !ok {
				t.Errorf("aggregated discovery lacks %s", g)
			}
		}
		if _, ok := groups[""]; ok {
			t.Errorf("aggregated /apis lists the core group")
		}
		// As kube-apiserver: an ETag, and 304 to a request that holds it
		// (kubectl's discovery cache revalidates so).
		etag := r.Header.Get("ETag")
		if len(etag) < 3 || etag[0] != '"' || r.Header.Get("Vary") != "Accept" || r.Header.Get("Cache-Control") != "public" {
			t.Errorf("aggregated /apis: ETag %q, Vary %q, Cache-Control %q; want a quoted ETag, Accept, public", etag, r.Header.Get("Vary"), r.Header.Get("Cache-Control"))
		}
		if again := k.do(t, "GET", "/apis", nil, "Accept: "+mediaType, "If-None-Match: "+etag); again.Code != http.StatusNotModified || len(again.Body) != 0 || again.Header.Get("ETag") != etag {
			t.Errorf("aggregated /apis with If-None-Match %s: %d, ETag %q, %d bytes; want 304, the same ETag, no body", etag, again.Code, again.Header.Get("ETag"), len(again.Body))
		}
		if other := k.do(t, "GET", "/apis", nil, "Accept: "+mediaType, `If-None-Match: "0"`); other.Code != http.StatusOK {
			t.Errorf("aggregated /apis with a stale If-None-Match: %d, want 200", other.Code)
		}

		// /api carries the core group.
		r = k.do(t, "GET", "/api", nil, "Accept: "+mediaType)
		if ct := r.Header.Get("Content-Type"); ct != mediaType {
			t.Errorf("/api Content-Type %q", ct)
		}
		var core apidiscoveryv2.APIGroupDiscoveryList
		decodeInto(t, r, &core)
		if len(core.Items) != 1 || core.Items[0].Name != "" || len(core.Items[0].Versions) != 1 || core.Items[0].Versions[0].Version != "v1" {
			t.Errorf("/api aggregated: %s", r.Body)
		}

		// Without the media type, the legacy form.
		r = k.do(t, "GET", "/apis", nil, "Accept: application/json")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "apidiscovery") {
			t.Errorf("plain /apis Content-Type %q", ct)
		}
	})

	t.Run("client-go discovery", func(t *testing.T) {
		dc := k.Client.Discovery()
		groups, resources, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, g := range groups {
			names[g.Name] = true
		}
		for _, g := range []string{"", "admissionregistration.k8s.io", "apiextensions.k8s.io", "resource.k8s.io"} {
			if !names[g] {
				t.Errorf("discovery lacks group %q", g)
			}
		}
		all := map[string]bool{}
		for _, l := range resources {
			for _, r := range l.APIResources {
				all[l.GroupVersion+"/"+r.Name] = true
			}
		}
		for _, r := range []string{
			"v1/namespaces",
			"apiextensions.k8s.io/v1/customresourcedefinitions",
			"apiextensions.k8s.io/v1/customresourcedefinitions/status",
			"admissionregistration.k8s.io/v1/validatingadmissionpolicies/status",
			"admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies",
			"resource.k8s.io/v1beta2/deviceclasses",
		} {
			if !all[r] {
				t.Errorf("discovery lacks %s", r)
			}
		}
		preferred, err := dc.ServerPreferredResources()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range preferred {
			if l.GroupVersion == "admissionregistration.k8s.io/v1beta1" && len(l.APIResources) > 0 {
				t.Errorf("preferred resources include v1beta1: %v", l.APIResources)
			}
		}
	})

	t.Run("version", func(t *testing.T) {
		var v version.Info
		decodeInto(t, k.do(t, "GET", "/version", nil), &v)
		if v.Major != "1" || v.Minor != "33" || !strings.HasPrefix(v.GitVersion, "v1.33.") ||
			v.EmulationMajor != "1" || v.EmulationMinor != "33" || v.MinCompatibilityMajor != "1" || v.MinCompatibilityMinor != "32" {
			t.Errorf("/version: %+v", v)
		}
		if _, err := time.Parse(time.RFC3339, v.BuildDate); err != nil {
			t.Errorf("/version buildDate %q is not a time, as kube-apiserver's always is: %v", v.BuildDate, err)
		}
		sv, err := k.Client.Discovery().ServerVersion()
		if err != nil || sv.Major != "1" || sv.Minor != "33" {
			t.Errorf("ServerVersion: %v %+v", err, sv)
		}
	})

	t.Run("health", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/livez", "/readyz"} {
			r := k.do(t, "GET", p, nil)
			if r.Code != http.StatusOK || string(r.Body) != "ok" {
				t.Errorf("%s: %d %q", p, r.Code, r.Body)
			}
			r = k.do(t, "GET", p+"?verbose", nil)
			if r.Code != http.StatusOK || !strings.Contains(string(r.Body), "[+]ping ok") || !strings.Contains(string(r.Body), "check passed") {
				t.Errorf("%s?verbose: %d %q", p, r.Code, r.Body)
			}
		}
	})

	t.Run("namespaces have no deletecollection", func(t *testing.T) {
		r := k.do(t, "DELETE", "/api/v1/namespaces", nil)
		expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
		l, err := k.Client.CoreV1().Namespaces().List(ctxT(t), metav1.ListOptions{})
		if err != nil || len(l.Items) != 4 {
			t.Errorf("namespaces after a collection DELETE: %v, %d", err, len(l.Items))
		}
	})
}

func TestTable(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("table-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := newVWC("table-b")
	b.Webhooks = append(b.Webhooks, b.Webhooks[0])
	b.Webhooks[1].Name = "second.example.com"
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, newCRD("tables", "example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const asTable = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"

	columns := func(tab metav1.Table) []string {
		var out []string
		for _, c := range tab.ColumnDefinitions {
			out = append(out, c.Name)
		}
		return out
	}

	t.Run("list", func(t *testing.T) {
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs), nil, asTable), &tab)
		if tab.Kind != "Table" || tab.APIVersion != "meta.k8s.io/v1" {
			t.Errorf("kind %q apiVersion %q", tab.Kind, tab.APIVersion)
		}
		if got := strings.Join(columns(tab), ","); got != "Name,Webhooks,Age" {
			t.Errorf("columns %s", got)
		}
		if tab.ResourceVersion == "" {
			t.Errorf("no list resourceVersion")
		}
		if len(tab.Rows) != 2 {
			t.Fatalf("%d rows", len(tab.Rows))
		}
		for i, want := range []struct {
			name  string
			hooks float64
		}{{"table-a", 1}, {"table-b", 2}} {
			cells := tab.Rows[i].Cells
			if len(cells) != 3 || cells[0] != want.name || cells[1] != want.hooks {
				t.Errorf("row %d cells %v, want [%s %v <age>]", i, cells, want.name, want.hooks)
			}
			// By default a row carries the object's metadata.
			var meta metav1.PartialObjectMetadata
			if err := json.Unmarshal(tab.Rows[i].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Name != want.name || meta.UID == "" {
				t.Errorf("row %d object %s (err %v)", i, tab.Rows[i].Object.Raw, err)
			}
		}
		for _, c := range tab.ColumnDefinitions {
			if c.Type == "" || c.Description == "" {
				t.Errorf("column %+v lacks type or description", c)
			}
		}
	})

	t.Run("single object", func(t *testing.T) {
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs)+"/table-b", nil, asTable), &tab)
		if tab.Kind != "Table" || len(tab.Rows) != 1 || tab.Rows[0].Cells[0] != "table-b" {
			t.Errorf("table of one: %+v", tab)
		}
		// It carries the object's resourceVersion.
		vwc, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "table-b", metav1.GetOptions{})
		if err != nil || tab.ResourceVersion != vwc.ResourceVersion {
			t.Errorf("table of one: resourceVersion %q, want the object's %q (%v)", tab.ResourceVersion, vwc.ResourceVersion, err)
		}
	})

	t.Run("includeObject", func(t *testing.T) {
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs)+"?includeObject=Object", nil, asTable), &tab)
		var obj map[string]interface{}
		if err := json.Unmarshal(tab.Rows[0].Object.Raw, &obj); err != nil || obj["kind"] != "ValidatingWebhookConfiguration" || obj["webhooks"] == nil {
			t.Errorf("includeObject=Object row object %s", tab.Rows[0].Object.Raw)
		}
		var none metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs)+"?includeObject=None", nil, asTable), &none)
		if len(none.Rows) != 2 || len(none.Rows[0].Object.Raw) != 0 {
			t.Errorf("includeObject=None rows %+v", none.Rows)
		}
		// A v1beta1 Table's rows hold v1beta1 metadata.
		var beta metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=Table;v=v1beta1;g=meta.k8s.io"), &beta)
		var row metav1.PartialObjectMetadata
		if err := json.Unmarshal(beta.Rows[0].Object.Raw, &row); err != nil || row.APIVersion != "meta.k8s.io/v1beta1" || row.Kind != "PartialObjectMetadata" {
			t.Errorf("v1beta1 Table row object %s, want a meta.k8s.io/v1beta1 PartialObjectMetadata", beta.Rows[0].Object.Raw)
		}
		// An unknown value is a bad request, as kube-apiserver words it.
		expectStatus(t, k.do(t, "GET", collectionPath(gvrVWCs)+"?includeObject=bogus", nil, asTable), http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`Unable to convert to Table as requested: includeObject: Invalid value: "bogus": must be 'Metadata', 'Object', 'None', or empty`)
	})

	t.Run("CRD default columns", func(t *testing.T) {
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", collectionPath(gvrCRDs), nil, asTable), &tab)
		if got := strings.Join(columns(tab), ","); got != "Name,Created At" {
			t.Errorf("CRD columns %s", got)
		}
		if len(tab.Rows) != 1 || tab.Rows[0].Cells[0] != "tables.example.com" {
			t.Errorf("CRD rows %+v", tab.Rows)
		}
	})

	t.Run("custom resources without printer columns", func(t *testing.T) {
		// kube's default column, Age, described as creationTimestamp is.
		eventually(t, 10*time.Second, "tables served", func() (bool, error) {
			return k.do(t, "GET", "/apis/example.com/v1/tables", nil).Code == http.StatusOK, nil
		})
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", "/apis/example.com/v1/tables", nil, asTable), &tab)
		if got := strings.Join(columns(tab), ","); got != "Name,Age" {
			t.Fatalf("custom resource columns %s", got)
		}
		if age := tab.ColumnDefinitions[1]; age.Type != "date" || age.Description != (metav1.ObjectMeta{}).SwaggerDoc()["creationTimestamp"] {
			t.Errorf("Age column %+v, want type date and creationTimestamp's description", age)
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		var tab metav1.Table
		decodeInto(t, k.do(t, "GET", "/api/v1/namespaces", nil, asTable), &tab)
		if got := strings.Join(columns(tab), ","); got != "Name,Status,Age" {
			t.Errorf("namespace columns %s", got)
		}
		for _, row := range tab.Rows {
			if row.Cells[1] != "Active" {
				t.Errorf("namespace row %v", row.Cells)
			}
		}
	})

	t.Run("fallback to JSON", func(t *testing.T) {
		// kubectl's Accept: Table preferred, plain JSON acceptable.
		r := k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		var tab metav1.Table
		decodeInto(t, r, &tab)
		if tab.Kind != "Table" {
			t.Errorf("kind %q", tab.Kind)
		}
		// An unknown "as" alone is not acceptable.
		r = k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=Graph;v=v1;g=meta.k8s.io")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	})

	t.Run("partial metadata of the other shape", func(t *testing.T) {
		// kube takes either media type, then finds the shape wrong (406).
		r := k.do(t, "GET", "/api/v1/namespaces/default", nil, "Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Namespace)")
		r = k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "you requested PartialObjectMetadata, but the requested object is a list (*admissionregistration.ValidatingWebhookConfigurationList)")
		r = k.do(t, "GET", "/apis/example.com/v1/tables", nil, "Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
		expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)")
	})

	t.Run("PartialObjectMetadataList", func(t *testing.T) {
		var l metav1.PartialObjectMetadataList
		decodeInto(t, k.do(t, "GET", collectionPath(gvrVWCs), nil, "Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"), &l)
		if l.Kind != "PartialObjectMetadataList" || len(l.Items) != 2 || l.Items[0].Name != "table-a" {
			t.Errorf("PartialObjectMetadataList: %+v", l)
		}
	})
}

// Discovery in kube-apiserver's shape: groups by priority then name (CRD
// groups after the built-in ones, whatever the order of creation), a
// CRD with no served version left out (legacy discovery answered 500), a
// Terminating CRD's resource with only the verbs that read and delete,
// response kinds without group and version for built-in kinds, status
// before scale, no apiVersion on /api/v1 nor on /apis' items, no storage
// version hash for an unserved storage version, aggregated discovery in
// v2 only, and a /version whose gitVersion is no semver prerelease.
func TestDiscoveryAsKube(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	const aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

	scaled := func(group string) *apiextensionsv1.CustomResourceDefinition {
		crd := newCRD("widgets", group)
		crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{
			Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
			Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.size", StatusReplicasPath: ".status.size"},
		}
		return crd
	}
	createCRD(t, k, scaled("b.example.com"))
	createCRD(t, k, scaled("a.example.com"))
	unserved := newCRD("gadgets", "unserved.example.com")
	unserved.Spec.Versions[0].Served = false
	createCRD(t, k, unserved)
	hidden := newCRD("things", "hidden.example.com")
	hidden.Spec.Versions = append(hidden.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v2", Served: true, Schema: hidden.Spec.Versions[0].Schema,
	})
	hidden.Spec.Versions[0].Served = false // the storage version
	createCRD(t, k, hidden)

	var groups metav1.APIGroupList
	r := k.do(t, "GET", "/apis", nil)
	decodeInto(t, r, &groups)
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	want := "admissionregistration.k8s.io,apiextensions.k8s.io,resource.k8s.io,a.example.com,b.example.com,hidden.example.com"
	if strings.Join(names, ",") != want {
		t.Errorf("/apis groups %v, want %s", names, want)
	}
	if strings.Contains(string(r.Body), `"kind":"APIGroup"`) {
		t.Errorf("/apis items carry a kind: %s", r.Body)
	}
	if _, err := k.Client.Discovery().ServerGroups(); err != nil {
		t.Errorf("client-go legacy discovery: %v", err)
	}

	var aggregated apidiscoveryv2.APIGroupDiscoveryList
	decodeInto(t, k.do(t, "GET", "/apis", nil, "Accept: "+aggregatedV2), &aggregated)
	names = nil
	for _, g := range aggregated.Items {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != want {
		t.Errorf("aggregated /apis groups %v, want %s", names, want)
	}
	for _, g := range aggregated.Items {
		for _, v := range g.Versions {
			for _, res := range v.Resources {
				switch {
				case g.Name == "a.example.com":
					if res.ResponseKind.Group != "a.example.com" || res.ResponseKind.Version != "v1" || len(res.Subresources) != 2 ||
						res.Subresources[0].Subresource != "status" || res.Subresources[1].Subresource != "scale" ||
						strings.Join(res.Verbs, ",") != "delete,deletecollection,get,list,patch,create,update,watch" {
						t.Errorf("aggregated widgets of a.example.com: %+v", res)
					}
				case strings.HasSuffix(g.Name, ".k8s.io"):
					if res.ResponseKind.Group != "" || res.ResponseKind.Version != "" || res.ResponseKind.Kind == "" {
						t.Errorf("aggregated %s/%s: response kind %+v, want the kind alone", g.Name, res.Resource, res.ResponseKind)
					}
				}
			}
		}
	}
	if r := k.do(t, "GET", "/apis", nil, "Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"); r.Code != http.StatusNotAcceptable {
		t.Errorf("aggregated v2beta1 alone: %d, want 406", r.Code)
	}

	core := k.do(t, "GET", "/api/v1", nil)
	if strings.Contains(string(core.Body), `"apiVersion"`) || !strings.Contains(string(core.Body), `"kind":"APIResourceList"`) {
		t.Errorf("/api/v1 carries an apiVersion, or no kind: %.200s", core.Body)
	}
	var things metav1.APIResourceList
	decodeInto(t, k.do(t, "GET", "/apis/hidden.example.com/v2", nil), &things)
	if res := findResource(&things, "things"); res == nil || res.StorageVersionHash != "" {
		t.Errorf("things served at v2, stored at the unserved v1: %+v", res)
	}

	// A CRD being deleted (its custom resource holds it with a finalizer).
	_, err := k.Dyn.Resource(schema.GroupVersionResource{Group: "a.example.com", Version: "v1", Resource: "widgets"}).Namespace("default").Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "a.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/hold"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.a.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Terminating CRD's verbs", func() bool {
		var l metav1.APIResourceList
		decodeInto(t, k.do(t, "GET", "/apis/a.example.com/v1", nil), &l)
		res := findResource(&l, "widgets")
		return res != nil && strings.Join(res.Verbs, ",") == "delete,deletecollection,get,list,watch"
	})

	var v version.Info
	decodeInto(t, k.do(t, "GET", "/version", nil), &v)
	if sv, err := utilversion.ParseSemantic(v.GitVersion); err != nil || sv.PreRelease() != "" {
		t.Errorf("gitVersion %q: %v, prerelease %q", v.GitVersion, err, sv.PreRelease())
	}
}

// Discovery lists a CRD's resource only once the CRD is Established, as
// kube-apiserver's discovery controller does: a client that waits for the
// resource in discovery (kube's own CRD test fixtures do) then finds the
// CRD's status settled, and its status update is no conflict with the
// CRD controller's.
func TestDiscoveryListsOnlyEstablishedCRDs(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	for i := 0; i < 20; i++ {
		plural := "estab" + strings.Repeat("x", i+1) + "s"
		crd := newCRD(plural, "estab.example.com")
		crd.Spec.Scope = apiextensionsv1.ClusterScoped
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var list metav1.APIResourceList
			r := k.do(t, "GET", "/apis/estab.example.com/v1", nil)
			if r.Code == http.StatusOK {
				decodeInto(t, r, &list)
			}
			if findResource(&list, plural) != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never listed in discovery", plural)
			}
			time.Sleep(time.Millisecond)
		}
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := crdCondition(got, apiextensionsv1.Established); c == nil || c.Status != apiextensionsv1.ConditionTrue {
			t.Fatalf("%s is listed in discovery while its conditions are %s, want it Established first", plural, fmtJSON(got.Status.Conditions))
		}
	}
}

// A CRD in a group of built-in kinds, as kube's integration tests make
// them (discovery's CRDBuiltinOverlapPrecence, controlplane's
// TestCRDShadowGroup): in a group version kube-apiserver serves built-in
// kinds in, the built-in handler alone answers, so the CRD's resource is
// in neither discovery of it and its requests there are the built-in
// router's 404; the CRD's other versions are listed at the priority of
// the API services kube registers for CRDs (100, above the built-in
// versions').
func TestDiscoveryCRDInBuiltinGroup(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	const aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

	bars := newCRD("bars", "apiextensions.k8s.io")
	bars.Annotations = map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/fake"}
	schema := bars.Spec.Versions[0].Schema
	bars.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1", Served: true, Storage: true, Schema: schema},
		{Name: "v2", Served: true, Schema: schema},
		{Name: "vfake", Served: true, Schema: schema},
	}
	createCRD(t, k, bars)
	shadow := newCRD("foos", "admissionregistration.k8s.io")
	shadow.Annotations = bars.Annotations
	shadow.Spec.Scope = apiextensionsv1.ClusterScoped
	createCRD(t, k, shadow)

	var ext metav1.APIGroup
	waitFor(t, "apiextensions.k8s.io/vfake in discovery", func() bool {
		decodeInto(t, k.do(t, "GET", "/apis/apiextensions.k8s.io", nil), &ext)
		return len(ext.Versions) == 3
	})
	if got := strings.Join(groupVersions(ext), ","); got != "apiextensions.k8s.io/v2,apiextensions.k8s.io/vfake,apiextensions.k8s.io/v1" || ext.PreferredVersion.Version != "v2" {
		t.Errorf("/apis/apiextensions.k8s.io: versions %s preferred %s, want v2, vfake, v1 preferred v2", got, ext.PreferredVersion.Version)
	}
	var aggregated apidiscoveryv2.APIGroupDiscoveryList
	decodeInto(t, k.do(t, "GET", "/apis", nil, "Accept: "+aggregatedV2), &aggregated)
	for _, g := range aggregated.Items {
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
			for _, res := range v.Resources {
				shadowed := (g.Name == "apiextensions.k8s.io" && v.Version == "v1" && res.Resource == "bars") ||
					(g.Name == "admissionregistration.k8s.io" && res.Resource == "foos")
				if shadowed {
					t.Errorf("aggregated discovery lists %s in %s/%s, served by built-in kinds", res.Resource, g.Name, v.Version)
				}
			}
			if g.Name == "apiextensions.k8s.io" && v.Version == "vfake" && (len(v.Resources) != 1 || v.Resources[0].Resource != "bars") {
				t.Errorf("aggregated apiextensions.k8s.io/vfake: %+v, want bars", v.Resources)
			}
		}
		if g.Name == "apiextensions.k8s.io" && strings.Join(versions, ",") != "v2,vfake,v1" {
			t.Errorf("aggregated apiextensions.k8s.io versions %v, want v2, vfake, v1", versions)
		}
	}
	for path, shadowed := range map[string]string{"/apis/apiextensions.k8s.io/v1": "bars", "/apis/admissionregistration.k8s.io/v1": "foos"} {
		var l metav1.APIResourceList
		decodeInto(t, k.do(t, "GET", path, nil), &l)
		if findResource(&l, shadowed) != nil || len(l.APIResources) == 0 {
			t.Errorf("%s lists %s, or nothing: %+v", path, shadowed, l.APIResources)
		}
	}
	expectStatus(t, k.do(t, "GET", "/apis/apiextensions.k8s.io/v1/namespaces/default/bars", nil), http.StatusNotFound, metav1.StatusReasonNotFound)
	expectStatus(t, k.do(t, "GET", "/apis/admissionregistration.k8s.io/v1/foos", nil), http.StatusNotFound, metav1.StatusReasonNotFound)
	if r := k.do(t, "GET", "/apis/apiextensions.k8s.io/vfake/namespaces/default/bars", nil); r.Code != http.StatusOK {
		t.Errorf("bars at vfake: %d %s", r.Code, r.Body)
	}
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctxT(t), metav1.ListOptions{}); err != nil {
		t.Errorf("the built-in kinds beside the shadowed CRD: %v", err)
	}
}
