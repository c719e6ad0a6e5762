package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func vwcNames(items []admissionregistrationv1.ValidatingWebhookConfiguration) []string {
	var names []string
	for _, i := range items {
		names = append(names, i.Name)
	}
	sort.Strings(names)
	return names
}

func TestListSelectors(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	for name, labels := range map[string]map[string]string{
		"a": {"env": "prod", "tier": "web"},
		"b": {"env": "dev", "tier": "web"},
		"c": {"env": "prod"},
		"d": nil,
	} {
		o := newVWC(name)
		o.Labels = labels
		if _, err := c.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		label, field string
		want         string
	}{
		{label: "", want: "a,b,c,d"},
		{label: "env=prod", want: "a,c"},
		{label: "env==prod", want: "a,c"},
		{label: "env!=prod", want: "b,d"},
		{label: "env in (prod,dev)", want: "a,b,c"},
		{label: "env notin (prod)", want: "b,d"},
		{label: "tier", want: "a,b"},
		{label: "!tier", want: "c,d"},
		{label: "env=prod,tier=web", want: "a"},
		{label: "env=staging", want: ""},
		{field: "metadata.name=b", want: "b"},
		{field: "metadata.name!=b", want: "a,c,d"},
		{label: "tier", field: "metadata.name=a", want: "a"},
		{label: "tier", field: "metadata.name=c", want: ""},
		// kube-apiserver accepts metadata.namespace for every kind; a
		// cluster-scoped object's namespace is "".
		{field: "metadata.namespace=", want: "a,b,c,d"},
		{field: "metadata.namespace=default", want: ""},
	} {
		l, err := c.List(ctx, metav1.ListOptions{LabelSelector: tc.label, FieldSelector: tc.field})
		if err != nil {
			t.Errorf("labelSelector %q fieldSelector %q: %v", tc.label, tc.field, err)
			continue
		}
		if got := strings.Join(vwcNames(l.Items), ","); got != tc.want {
			t.Errorf("labelSelector %q fieldSelector %q: got [%s], want [%s]", tc.label, tc.field, got, tc.want)
		}
	}

	// A field selector on a field the kind does not offer.
	_, err := c.List(ctx, metav1.ListOptions{FieldSelector: "spec.foo=bar"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.foo") {
		t.Errorf("unsupported field label: %v, want BadRequest naming spec.foo", err)
	}
	// A malformed label selector.
	_, err = c.List(ctx, metav1.ListOptions{LabelSelector: "env in prod"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("malformed labelSelector: %v, want BadRequest", err)
	}
	// Namespaces also select on status.phase.
	nl, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Active,metadata.name=default"})
	if err != nil || len(nl.Items) != 1 || nl.Items[0].Name != "default" {
		t.Errorf("namespaces by status.phase: %v %v", err, nl)
	}
	// Malformed resourceVersions and continue tokens, answered in
	// kube-apiserver's storage's words: a list's 400, a watch's 500 before
	// its stream (its watch cache's error is no Status).
	const badRV = `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	r := k.do(t, "GET", "/api/v1/namespaces?resourceVersion=abc&limit=1", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid resource version: "+badRV)
	r = k.do(t, "GET", "/api/v1/namespaces?watch=1&resourceVersion=abc", nil)
	if st := r.Status(t); r.Code != http.StatusInternalServerError || st.Reason != "" || st.Message != badRV {
		t.Errorf("watch from resourceVersion abc: %d %s, want 500 %q", r.Code, r.Body, badRV)
	}
	r = k.do(t, "GET", "/api/v1/namespaces?limit=1&continue=%25%25%25&resourceVersion=5", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid continue token: continue key is not valid: illegal base64 data at input byte 0")

	// An unsupported field, worded as kube-apiserver words it per kind:
	// namespaces convert their field labels themselves, the others by the
	// scheme's default.
	r = k.do(t, "GET", "/api/v1/namespaces?fieldSelector=metadata.namespace%3Dx", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "field label not supported: metadata.namespace")
	r = k.do(t, "GET", collectionPath(gvrDevClasses)+"?fieldSelector=spec.x%3Dy", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"`)
}

// A paginated list is one consistent snapshot: every page is served at the
// first page's resourceVersion, whatever happens between pages.
func TestListPagination(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	const n = 25
	var want []string
	for i := 0; i < n; i++ {
		o := newVWC(fmt.Sprintf("page-%02d", i))
		o.Labels = map[string]string{"version": "old"}
		if _, err := c.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, o.Name)
	}

	first, err := c.List(ctx, metav1.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	snapshotRV := first.ResourceVersion
	if len(first.Items) != 10 || first.Continue == "" {
		t.Fatalf("first page: %d items, continue %q", len(first.Items), first.Continue)
	}
	if first.RemainingItemCount == nil || *first.RemainingItemCount != n-10 {
		t.Errorf("first page remainingItemCount %v, want %d", first.RemainingItemCount, n-10)
	}

	// Writes between pages: a deletion, an update and a creation in the
	// part of the list not yet read, and a deletion in the part read.
	if err := c.Delete(ctx, "page-12", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "page-03", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	upd, err := c.Get(ctx, "page-15", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd.Labels["version"] = "new"
	if _, err := c.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"page-10a", "page-99"} {
		if _, err := c.Create(ctx, newVWC(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var got []string
	for _, i := range first.Items {
		got = append(got, i.Name)
	}
	cont := first.Continue
	pages := 1
	for cont != "" {
		page, err := c.List(ctx, metav1.ListOptions{Limit: 10, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if page.ResourceVersion != snapshotRV {
			t.Errorf("page %d resourceVersion %s, want the first page's %s", pages, page.ResourceVersion, snapshotRV)
		}
		for _, i := range page.Items {
			got = append(got, i.Name)
			if i.Name == "page-15" && i.Labels["version"] != "old" {
				t.Errorf("page-15 appears with its later labels %v, want the snapshot's", i.Labels)
			}
			if rvInt(t, i.ResourceVersion) > rvInt(t, snapshotRV) {
				t.Errorf("%s has resourceVersion %s, newer than the snapshot %s", i.Name, i.ResourceVersion, snapshotRV)
			}
		}
		switch {
		case page.Continue != "" && (page.RemainingItemCount == nil || *page.RemainingItemCount != int64(n-len(got))):
			t.Errorf("page %d remainingItemCount %v, want %d", pages, page.RemainingItemCount, n-len(got))
		case page.Continue == "" && page.RemainingItemCount != nil:
			t.Errorf("last page has remainingItemCount %d", *page.RemainingItemCount)
		}
		cont = page.Continue
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if pages != 3 {
		t.Errorf("%d pages, want 3", pages)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paginated names:\n got %v\nwant %v", got, want)
	}

	// A new list sees the writes.
	now, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := vwcNames(now.Items)
	if len(names) != n-2+2 || !contains(names, "page-10a") || contains(names, "page-12") {
		t.Errorf("list after the writes: %v", names)
	}

	// Limit without more items: no continue.
	all, err := c.List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil || all.Continue != "" || all.RemainingItemCount != nil || len(all.Items) != len(names) {
		t.Errorf("limit larger than the list: err=%v continue=%q remaining=%v items=%d", err, all.Continue, all.RemainingItemCount, len(all.Items))
	}

	// Pagination with a label selector counts only matches.
	sel, err := c.List(ctx, metav1.ListOptions{Limit: 5, LabelSelector: "version=old"})
	if err != nil {
		t.Fatal(err)
	}
	seen := vwcNames(sel.Items)
	for cont := sel.Continue; cont != ""; {
		p, err := c.List(ctx, metav1.ListOptions{Limit: 5, LabelSelector: "version=old", Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, vwcNames(p.Items)...)
		cont = p.Continue
	}
	if len(seen) != n-3 || contains(seen, "page-15") {
		t.Errorf("selected pages: %d items %v, want %d without page-15", len(seen), seen, n-3)
	}

	// One name selected: kube's store reads that one key, so no continue
	// follows even with a limit.
	one, err := c.List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: "metadata.name=page-00"})
	if err != nil || len(one.Items) != 1 || one.Continue != "" || one.RemainingItemCount != nil {
		t.Errorf("one name with limit 1: err=%v items=%d continue=%q remaining=%v, want one item and no continue", err, len(one.Items), one.Continue, one.RemainingItemCount)
	}

	// A token for "whatever is current" (rv -1: what a 410 for a
	// compacted token offers): its page reads the current state, and the
	// next token continues at that page's resourceVersion.
	var tok map[string]any
	if data, err := base64.RawURLEncoding.DecodeString(first.Continue); err != nil || json.Unmarshal(data, &tok) != nil {
		t.Fatalf("first page's token %q: %v", first.Continue, err)
	}
	tok["rv"] = -1
	data, _ := json.Marshal(tok)
	latest, err := c.List(ctx, metav1.ListOptions{Limit: 5, Continue: base64.RawURLEncoding.EncodeToString(data)})
	if err != nil || latest.Continue == "" {
		t.Fatalf("page from an rv -1 token: %v, continue %q", err, latest.Continue)
	}
	var next map[string]any
	if data, err := base64.RawURLEncoding.DecodeString(latest.Continue); err != nil || json.Unmarshal(data, &next) != nil {
		t.Fatalf("next token %q: %v", latest.Continue, err)
	}
	if rv, _ := next["rv"].(float64); fmt.Sprint(int64(rv)) != latest.ResourceVersion {
		t.Errorf("the token after an rv -1 page has rv %v, want the page's resourceVersion %s", next["rv"], latest.ResourceVersion)
	}

	// A garbage continue token.
	_, err = c.List(ctx, metav1.ListOptions{Limit: 5, Continue: "not-a-token"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue token: %v, want BadRequest", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestListResourceVersionMatch(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	c := k.Client.ResourceV1beta2().DeviceClasses()

	a, err := c.Create(ctx, newDeviceClass("a.example.com"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv1 := a.ResourceVersion
	a.Labels = map[string]string{"step": "2"}
	a, err = c.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv2 := a.ResourceVersion
	if _, err := c.Create(ctx, newDeviceClass("b.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "a.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	exact := func(rv string) []string {
		t.Helper()
		l, err := c.List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatalf("list at exact %s: %v", rv, err)
		}
		if l.ResourceVersion != rv {
			t.Errorf("list at exact %s answered resourceVersion %s", rv, l.ResourceVersion)
		}
		var out []string
		for _, i := range l.Items {
			out = append(out, i.Name+":"+i.Labels["step"]+":"+i.ResourceVersion)
		}
		return out
	}
	if got := exact(rv1); strings.Join(got, ",") != "a.example.com::"+rv1 {
		t.Errorf("state at %s: %v, want a without labels", rv1, got)
	}
	if got := exact(rv2); strings.Join(got, ",") != "a.example.com:2:"+rv2 {
		t.Errorf("state at %s: %v, want a with step=2", rv2, got)
	}

	// Current state.
	l, err := c.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "b.example.com" {
		t.Fatalf("current list: %v %v", err, l)
	}
	// NotOlderThan an old resourceVersion answers at least as new.
	nl, err := c.List(ctx, metav1.ListOptions{ResourceVersion: rv1, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil || rvInt(t, nl.ResourceVersion) < rvInt(t, l.ResourceVersion) || len(nl.Items) != 1 {
		t.Errorf("NotOlderThan %s: err=%v rv=%s items=%d", rv1, err, nl.ResourceVersion, len(nl.Items))
	}
	// resourceVersion=0: any state is acceptable, but it must list, and
	// whole: kube-apiserver serves it from its watch cache, where a limit
	// is ignored (a reflector's first list must not turn it into pages).
	if _, err := c.Create(ctx, newDeviceClass("c.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if zl, err := c.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); err != nil || len(zl.Items) != 2 || zl.Continue != "" {
		t.Errorf("list at resourceVersion 0 with limit 1: %v, %d items, continue %q; want both objects and no continue", err, len(zl.Items), zl.Continue)
	}
	// A resourceVersion with a limit and no match is the legacy Exact: the
	// pages show the state at that resourceVersion (b alone), not the
	// current one (b and c).
	var paged []string
	opts := metav1.ListOptions{ResourceVersion: l.ResourceVersion, Limit: 1}
	for {
		page, err := c.List(ctx, opts)
		if err != nil {
			t.Fatalf("pages at %s: %v", l.ResourceVersion, err)
		}
		for _, i := range page.Items {
			paged = append(paged, i.Name)
		}
		if page.Continue == "" {
			break
		}
		opts = metav1.ListOptions{Continue: page.Continue, Limit: 1}
	}
	if strings.Join(paged, ",") != "b.example.com" {
		t.Errorf("pages at resourceVersion %s with limit 1: %v, want the state then: b.example.com", l.ResourceVersion, paged)
	}

	// resourceVersionMatch without resourceVersion is invalid.
	r := k.do(t, http.MethodGet, collectionPath(gvrDevClasses)+"?resourceVersionMatch=Exact", nil)
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "resourceVersionMatch")
	_, err = c.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.IsInvalid(err) {
		t.Errorf("NotOlderThan without resourceVersion: %v, want Invalid", err)
	}
	// Exact with resourceVersion 0 is invalid too.
	_, err = c.List(ctx, metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsInvalid(err) {
		t.Errorf("Exact at resourceVersion 0: %v, want Invalid", err)
	}
}

// A built-in kind's list items carry no apiVersion and kind, as
// kube-apiserver encodes its typed lists (clients fill them in from the
// list's); custom resources' items keep theirs.
func TestListItemsTypeMeta(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	mustCode(t, "create a gadget", k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/default/gadgets", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"color":"red"}}`)), http.StatusCreated)
	for path, typed := range map[string]bool{"/api/v1/namespaces": false, "/apis/dyn.example.com/v1/namespaces/default/gadgets": true} {
		var list struct {
			Kind  string           `json:"kind"`
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(k.do(t, "GET", path, nil).Body, &list); err != nil || len(list.Items) == 0 {
			t.Fatalf("%s: %v, %d items", path, err, len(list.Items))
		}
		for _, item := range list.Items {
			_, hasKind := item["kind"]
			_, hasVersion := item["apiVersion"]
			if hasKind != typed || hasVersion != typed {
				t.Errorf("%s item: kind %v apiVersion %v, want both present: %v", path, item["kind"], item["apiVersion"], typed)
			}
		}
	}
	// client-go's dynamic client fills them in.
	l, err := k.Dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(ctxT(t), metav1.ListOptions{})
	if err != nil || len(l.Items) == 0 || l.Items[0].GetKind() != "Namespace" || l.Items[0].GetAPIVersion() != "v1" {
		t.Errorf("dynamic list of namespaces: %v, first item %v", err, l.Items)
	}
}

// A list across namespaces comes in kube-apiserver's order, etcd's keys
// "<namespace>/<name>": a namespace's objects come after those of a
// namespace it prefixes followed by '-' ("app-x/…" before "app/…"), in
// client-go's pages and in kubectl get --all-namespaces alike.
func TestListOrderAcrossNamespaces(t *testing.T) {
	t.Parallel()
	requireKubectl(t)
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, newCRD("orders", "order.example.com"))
	orders := k.Dyn.Resource(schema.GroupVersionResource{Group: "order.example.com", Version: "v1", Resource: "orders"})
	for _, key := range []string{"apps/a", "app/b", "app-x/a", "app/a", "app-x-y/c"} {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace(ns), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "order.example.com/v1", "kind": "Order", "metadata": map[string]any{"name": name}}}
		if _, err := orders.Namespace(ns).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := "app-x-y/c app-x/a app/a app/b apps/a"

	var got []string
	opts := metav1.ListOptions{Limit: 2}
	for page := 0; ; page++ {
		l, err := orders.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			got = append(got, o.GetNamespace()+"/"+o.GetName())
		}
		if left := int64(5 - len(got)); l.GetContinue() != "" && (l.GetRemainingItemCount() == nil || *l.GetRemainingItemCount() != left) {
			t.Errorf("page %d: remainingItemCount %v, want %d", page, l.GetRemainingItemCount(), left)
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" || page > 5 {
			break
		}
	}
	if strings.Join(got, " ") != want {
		t.Errorf("pages of 2 across namespaces: %v, want %s", got, want)
	}

	out := k.mustKubectl(t, "get", "orders.order.example.com", "--all-namespaces", "--no-headers", "-o", "custom-columns=KEY:.metadata.namespace,NAME:.metadata.name")
	if lines := strings.Fields(out); strings.Join(lines, " ") != "app-x-y c app-x a app a app b apps a" {
		t.Errorf("kubectl get --all-namespaces:\n%s\nwant the order %s", out, want)
	}
}
