package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRD conversion webhooks: kapi resolves the webhook's service reference
// through --service-resolver and calls it over TLS with the service's DNS
// name, as kube-apiserver calls a Service.

// webhookCerts makes a self-signed CA and a serving certificate it signs,
// valid for dnsName and 127.0.0.1. It returns the CA's PEM.
func webhookCerts(t testing.TB, dnsName string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "e2e webhook CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: dnsName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{dnsName},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// converter is a conversion webhook between v1's spec.size and v2's
// spec.replicas of conv.example.com.
type converter struct {
	mu      sync.Mutex
	calls   int
	sni     []string
	desired []string
	first   *apiextensionsv1.ConversionReview
	errs    []string
	objects []int // objects per review, in order
	// versioned counts the objects sent with a resourceVersion.
	versioned int
}

func (c *converter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if r.TLS != nil {
		c.sni = append(c.sni, r.TLS.ServerName)
	}
	if r.URL.Path != "/convert" || r.Method != http.MethodPost {
		c.errs = append(c.errs, fmt.Sprintf("%s %s", r.Method, r.URL))
		http.NotFound(w, r)
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		c.errs = append(c.errs, fmt.Sprintf("bad review (%v)", err))
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	if c.first == nil {
		c.first = review.DeepCopy()
	}
	to := review.Request.DesiredAPIVersion
	c.desired = append(c.desired, to)
	c.objects = append(c.objects, len(review.Request.Objects))
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		obj := map[string]interface{}{}
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			c.errs = append(c.errs, err.Error())
			continue
		}
		if meta, ok := obj["metadata"].(map[string]interface{}); ok && meta["resourceVersion"] != nil {
			c.versioned++
		}
		if spec, ok := obj["spec"].(map[string]interface{}); ok {
			from, into := "size", "replicas"
			if to == "conv.example.com/v1" {
				from, into = "replicas", "size"
			}
			if v, ok := spec[from]; ok {
				spec[into] = v
				delete(spec, from)
			}
		}
		obj["apiVersion"] = to
		data, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	out := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Response: resp,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// reviewSizes are the numbers of objects of the reviews so far.
func (c *converter) reviewSizes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.objects...)
}

func (c *converter) snapshot() (calls int, sni, desired, errs []string, first *apiextensionsv1.ConversionReview) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, append([]string(nil), c.sni...), append([]string(nil), c.desired...), append([]string(nil), c.errs...), c.first
}

// convCRD is a CRD of conv.example.com whose conversion webhook is the
// service webhooks/<service>:443, path /convert.
func convCRD(t testing.TB, plural, kind, service string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	crd := crdFromYAML(t, strings.NewReplacer("PLURAL", plural, "KIND", kind, "SERVICE", service).Replace(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: PLURAL.conv.example.com
spec:
  group: conv.example.com
  scope: Namespaced
  names:
    plural: PLURAL
    kind: KIND
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        service:
          namespace: webhooks
          name: SERVICE
          port: 443
          path: /convert
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas:
                type: integer
`))
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = caBundle
	return crd
}

func TestConversionWebhook(t *testing.T) {
	t.Parallel()
	caPEM, cert := webhookCerts(t, "conv.webhooks.svc")
	conv := &converter{}
	srv := httptest.NewUnstartedServer(conv)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	k := startKapi(t, "--in-memory", "--service-resolver", fmt.Sprintf("webhooks/conv:443=127.0.0.1:%d", port))
	ctx := ctxT(t)

	createCRD(t, k, convCRD(t, "sprockets", "Sprocket", "conv", caPEM))
	v1 := k.Dyn.Resource(schema.GroupVersionResource{Group: "conv.example.com", Version: "v1", Resource: "sprockets"}).Namespace("default")
	v2 := k.Dyn.Resource(schema.GroupVersionResource{Group: "conv.example.com", Version: "v2", Resource: "sprockets"}).Namespace("default")

	created, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "conv.example.com/v1", "kind": "Sprocket",
		"metadata": map[string]interface{}{"name": "s1"},
		"spec":     map[string]interface{}{"size": int64(3)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v1: %v", err)
	}
	got, err := v2.Get(ctx, "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through v2: %v", err)
	}
	if got.GetAPIVersion() != "conv.example.com/v2" || got.GetKind() != "Sprocket" || got.GetUID() != created.GetUID() {
		t.Errorf("get through v2: %s %s uid %s", got.GetAPIVersion(), got.GetKind(), got.GetUID())
	}
	if spec := got.Object["spec"]; !jsonEqual(spec, map[string]interface{}{"replicas": int64(3)}) {
		t.Errorf("spec through v2 %v, want {replicas: 3} (converted by the webhook)", spec)
	}
	calls, sni, desired, errs, first := conv.snapshot()
	if calls == 0 {
		t.Fatalf("the conversion webhook was not called")
	}
	if len(errs) > 0 {
		t.Errorf("bad webhook requests: %q", errs)
	}
	for _, name := range sni {
		if name != "conv.webhooks.svc" {
			t.Errorf("TLS server name %q, want conv.webhooks.svc", name)
		}
	}
	if !contains(desired, "conv.example.com/v2") {
		t.Errorf("desired versions %q, want conv.example.com/v2 among them", desired)
	}
	if first != nil {
		if first.APIVersion != "apiextensions.k8s.io/v1" || first.Kind != "ConversionReview" || first.Request.UID == "" || len(first.Request.Objects) != 1 {
			t.Errorf("first review: %s", fmtJSON(first))
		} else {
			var obj unstructured.Unstructured
			if err := obj.UnmarshalJSON(first.Request.Objects[0].Raw); err != nil || obj.GetAPIVersion() != "conv.example.com/v1" || obj.GetName() != "s1" {
				t.Errorf("first review's object: %s (%v)", first.Request.Objects[0].Raw, err)
			}
		}
	}

	// Through v2 into storage (v1) and back: as kube-apiserver, the
	// create converts twice (to store it, to answer it), an update three
	// times (the stored object to v2 first).
	before := len(conv.reviewSizes())
	made, err := v2.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "conv.example.com/v2", "kind": "Sprocket",
		"metadata": map[string]interface{}{"name": "s2"},
		"spec":     map[string]interface{}{"replicas": int64(5)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v2: %v", err)
	}
	if made.GetAPIVersion() != "conv.example.com/v2" || !jsonEqual(made.Object["spec"], map[string]interface{}{"replicas": int64(5)}) {
		t.Errorf("create through v2 answered %s %v", made.GetAPIVersion(), made.Object["spec"])
	}
	if n := len(conv.reviewSizes()) - before; n != 2 {
		t.Errorf("the create through v2 called the conversion webhook %d times, want 2", n)
	}
	stored, err := v1.Get(ctx, "s2", metav1.GetOptions{})
	if err != nil || !jsonEqual(stored.Object["spec"], map[string]interface{}{"size": int64(5)}) {
		t.Errorf("s2 through v1: %v %v, want spec {size: 5}", err, stored)
	}
	before = len(conv.reviewSizes())
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list through v2: %v", err)
	}
	// As kube-apiserver: one review for the objects of the list.
	if sizes := conv.reviewSizes()[before:]; len(sizes) != 1 || sizes[0] != 2 {
		t.Errorf("the list through v2 sent reviews of %v objects, want one of 2", sizes)
	}
	if len(list.Items) != 2 || list.GetAPIVersion() != "conv.example.com/v2" {
		t.Fatalf("list through v2: %d items, %s", len(list.Items), list.GetAPIVersion())
	}
	for _, it := range list.Items {
		if it.GetAPIVersion() != "conv.example.com/v2" || nested(&it, "spec", "replicas") == nil || nested(&it, "spec", "size") != nil {
			t.Errorf("listed through v2: %s %v", it.GetAPIVersion(), it.Object["spec"])
		}
	}
	// An update through v2.
	unstructured.SetNestedField(made.Object, int64(6), "spec", "replicas")
	before = len(conv.reviewSizes())
	if _, err := v2.Update(ctx, made, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through v2: %v", err)
	}
	if n := len(conv.reviewSizes()) - before; n != 3 {
		t.Errorf("the update through v2 called the conversion webhook %d times, want 3", n)
	}
	stored, err = v1.Get(ctx, "s2", metav1.GetOptions{})
	if err != nil || !jsonEqual(stored.Object["spec"], map[string]interface{}{"size": int64(6)}) {
		t.Errorf("s2 through v1 after the v2 update: %v %v, want spec {size: 6}", err, stored)
	}
	// Reads, creates, lists and updates convert where kube-apiserver's
	// storage codec does: before its store sets the resourceVersion of
	// what it read, after it cleared that of what it writes. The webhook
	// sees none.
	conv.mu.Lock()
	if conv.versioned != 0 {
		t.Errorf("the conversion webhook was sent %d objects with a resourceVersion", conv.versioned)
	}
	conv.mu.Unlock()

	// A deletecollection through v2 answers the deleted objects in v2,
	// converted together too.
	before = len(conv.reviewSizes())
	r := k.do(t, "DELETE", "/apis/conv.example.com/v2/namespaces/default/sprockets", nil)
	var deleted unstructured.UnstructuredList
	if err := deleted.UnmarshalJSON(r.Body); r.Code != http.StatusOK || err != nil || len(deleted.Items) != 2 {
		t.Fatalf("deletecollection through v2: %d %s (%v)", r.Code, r.Body, err)
	}
	for _, it := range deleted.Items {
		if it.GetAPIVersion() != "conv.example.com/v2" || nested(&it, "spec", "replicas") == nil {
			t.Errorf("deleted through v2: %s %v", it.GetAPIVersion(), it.Object["spec"])
		}
	}
	if sizes := conv.reviewSizes()[before:]; len(sizes) != 1 || sizes[0] != 2 {
		t.Errorf("the deletecollection through v2 sent reviews of %v objects, want one of 2", sizes)
	}

	// A CRD whose webhook service the resolver does not know: the
	// storage version still works, the other fails with a Status.
	createCRD(t, k, convCRD(t, "gizmos", "Gizmo", "missing", caPEM))
	const gizmos = "/apis/conv.example.com/%s/namespaces/default/gizmos"
	for _, name := range []string{"g0", "g1"} {
		r = k.do(t, "POST", fmt.Sprintf(gizmos, "v1"), []byte(`{"apiVersion":"conv.example.com/v1","kind":"Gizmo","metadata":{"name":"`+name+`"},"spec":{"size":1}}`))
		if r.Code != http.StatusCreated {
			t.Fatalf("create gizmo %s through v1: %d %s", name, r.Code, r.Body)
		}
	}
	const convFailed = "conversion webhook for conv.example.com/v1, Kind=Gizmo failed: "
	for _, p := range []string{fmt.Sprintf(gizmos, "v2") + "/g1", fmt.Sprintf(gizmos, "v2")} {
		start := time.Now()
		r = k.do(t, "GET", p, nil)
		if time.Since(start) > 10*time.Second {
			t.Errorf("GET %s took %v", p, time.Since(start))
		}
		st := r.Status(t)
		if r.Code < 400 || st.Status != metav1.StatusFailure || st.Code != int32(r.Code) || st.Message == "" {
			t.Errorf("GET %s: %d %s, want a failure Status", p, r.Code, r.Body)
		}
	}
	// kube-apiserver converts in its storage decoder and returns the
	// converter's error of a GET as it is: 500, no reason, the message the
	// converter's.
	r = k.do(t, "GET", fmt.Sprintf(gizmos, "v2")+"/g1", nil)
	if st := r.Status(t); r.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonUnknown || !strings.HasPrefix(st.Message, convFailed) {
		t.Errorf("GET g1 through v2: %d reason %q message %q, want 500, reason \"\" and a message starting %q", r.Code, st.Reason, st.Message, convFailed)
	}
	// The list's two objects go to the webhook together: its failure is
	// the list's, a 500 as well.
	r = k.do(t, "GET", fmt.Sprintf(gizmos, "v2"), nil)
	if st := r.Status(t); r.Code != http.StatusInternalServerError || !strings.HasPrefix(st.Message, "conversion webhook for conv.example.com/v2, Kind=GizmoList failed: ") {
		t.Errorf("LIST gizmos through v2: %d message %q, want 500 and the converter's message", r.Code, st.Message)
	}
	// A selectable field is read from the object as served: its failed
	// conversion fails the list the same way.
	gizmoCRD, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctxT(t), "gizmos.conv.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range gizmoCRD.Spec.Versions {
		if gizmoCRD.Spec.Versions[i].Name == "v2" {
			gizmoCRD.Spec.Versions[i].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.replicas"}}
		}
	}
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctxT(t), gizmoCRD, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "spec.replicas selectable in v2", func() (bool, error) {
		r := k.do(t, "GET", fmt.Sprintf(gizmos, "v2")+"?fieldSelector=spec.replicas%3D1", nil)
		return r.Code != http.StatusBadRequest, nil
	})
	r = k.do(t, "GET", fmt.Sprintf(gizmos, "v2")+"?fieldSelector=spec.replicas%3D1", nil)
	if st := r.Status(t); r.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonUnknown || !strings.HasPrefix(st.Message, convFailed) {
		t.Errorf("LIST gizmos through v2 by spec.replicas: %d reason %q message %q, want 500, reason \"\" and a message starting %q", r.Code, st.Reason, st.Message, convFailed)
	}
	r = k.do(t, "POST", fmt.Sprintf(gizmos, "v2"), []byte(`{"apiVersion":"conv.example.com/v2","kind":"Gizmo","metadata":{"name":"g2"},"spec":{"replicas":1}}`))
	if st := r.Status(t); r.Code < 400 || st.Code != int32(r.Code) || !strings.Contains(st.Message, "conversion webhook for conv.example.com/v2, Kind=Gizmo failed") {
		t.Errorf("create a gizmo through v2: %d %s, want a failure Status naming the conversion webhook", r.Code, r.Body)
	}
	if _, err := k.Dyn.Resource(schema.GroupVersionResource{Group: "conv.example.com", Version: "v1", Resource: "gizmos"}).Namespace("default").Get(ctx, "g2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("gizmo g2 after the failed create: %v, want NotFound", err)
	}
	// A delete reads the object through the request's version first, as
	// kube-apiserver's store does: the failing conversion fails it, and
	// nothing is deleted (one object, or a collection).
	r = k.do(t, "DELETE", fmt.Sprintf(gizmos, "v2")+"/g1", nil)
	if st := r.Status(t); r.Code != http.StatusInternalServerError || !strings.HasPrefix(st.Message, convFailed) {
		t.Errorf("DELETE g1 through v2: %d %s, want 500 and the converter's message", r.Code, r.Body)
	}
	r = k.do(t, "DELETE", fmt.Sprintf(gizmos, "v2"), nil)
	if r.Code != http.StatusInternalServerError {
		t.Errorf("deletecollection of gizmos through v2: %d %s, want 500", r.Code, r.Body)
	}
	for _, name := range []string{"g0", "g1"} {
		if r := k.do(t, "GET", fmt.Sprintf(gizmos, "v1")+"/"+name, nil); r.Code != http.StatusOK {
			t.Errorf("gizmo %s after the failed deletes: %d, want it still there", name, r.Code)
		}
	}

	// An invalid object is refused by v2's schema before any conversion,
	// as kube-apiserver validates in the request's version.
	r = k.do(t, "POST", fmt.Sprintf(gizmos, "v2"), []byte(`{"apiVersion":"conv.example.com/v2","kind":"Gizmo","metadata":{"name":"g3"},"spec":{"replicas":"many"}}`))
	if st := r.Status(t); r.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || !strings.Contains(st.Message, "spec.replicas: Invalid value") {
		t.Errorf("create an invalid gizmo through v2: %d %s, want 422 Invalid on spec.replicas", r.Code, r.Body)
	}
	// The storage version still reads, and kapi still serves.
	if r := k.do(t, "GET", fmt.Sprintf(gizmos, "v1")+"/g1", nil); r.Code != http.StatusOK {
		t.Errorf("GET g1 through v1: %d %s", r.Code, r.Body)
	}
	if r := k.do(t, "GET", "/readyz", nil); r.Code != http.StatusOK {
		t.Errorf("/readyz: %d %s", r.Code, r.Body)
	}
}

// jsonEqual compares two JSON-like values by their JSON.
func jsonEqual(a, b interface{}) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// A watch of a version the conversion webhook can no longer convert to
// ends when an event needs converting, with no ERROR event, as
// kube-apiserver's watch cache of that version ends all its watchers'
// streams when a conversion fails (clients watch again); the storage
// version's watch goes on.
func TestConversionWebhookDownEndsWatch(t *testing.T) {
	t.Parallel()
	caPEM, cert := webhookCerts(t, "conv.webhooks.svc")
	srv := httptest.NewUnstartedServer(&converter{})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	k := startKapi(t, "--in-memory", "--service-resolver", fmt.Sprintf("webhooks/conv:443=127.0.0.1:%d", port))
	createCRD(t, k, convCRD(t, "sprockets", "Sprocket", "conv", caPEM))
	const sprockets = "/apis/conv.example.com/%s/namespaces/default/sprockets"
	list := k.do(t, "GET", fmt.Sprintf(sprockets, "v1"), nil)
	var lm struct {
		Metadata metav1.ListMeta `json:"metadata"`
	}
	if err := json.Unmarshal(list.Body, &lm); list.Code != http.StatusOK || err != nil {
		t.Fatalf("list through v1: %d %s", list.Code, list.Body)
	}
	srv.Close() // the conversion webhook is down from here on

	type watched struct {
		r    httpResult
		took time.Duration
	}
	watch := func(version string) <-chan watched {
		done := make(chan watched, 1)
		go func() {
			start := time.Now()
			r := k.do(t, "GET", fmt.Sprintf(sprockets, version)+"?watch=1&timeoutSeconds=4&resourceVersion="+lm.Metadata.ResourceVersion, nil)
			done <- watched{r, time.Since(start)}
		}()
		return done
	}
	v2, v1 := watch("v2"), watch("v1")
	r := k.do(t, "POST", fmt.Sprintf(sprockets, "v1"), []byte(`{"apiVersion":"conv.example.com/v1","kind":"Sprocket","metadata":{"name":"s1"},"spec":{"size":1}}`))
	if r.Code != http.StatusCreated {
		t.Fatalf("create through v1 (no conversion needed): %d %s", r.Code, r.Body)
	}
	w := <-v2
	if w.r.Code != http.StatusOK || strings.Contains(string(w.r.Body), `"ERROR"`) || strings.Contains(string(w.r.Body), `"ADDED"`) || w.took > 3*time.Second {
		t.Errorf("watch through v2: %d after %v: %s\nwant its stream ended at the event, with no event", w.r.Code, w.took, w.r.Body)
	}
	w = <-v1
	if w.r.Code != http.StatusOK || !strings.Contains(string(w.r.Body), `"type":"ADDED"`) || strings.Contains(string(w.r.Body), `"ERROR"`) {
		t.Errorf("watch through v1: %d %s, want the ADDED event", w.r.Code, w.r.Body)
	}
	// A new watch through v2 whose initial objects cannot be converted:
	// an ERROR event carrying the converter's error (kube-apiserver
	// refuses such a watch with a 429 before its stream starts).
	r = k.do(t, "GET", fmt.Sprintf(sprockets, "v2")+"?watch=1&timeoutSeconds=4", nil)
	var ev struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	if err := json.Unmarshal(r.Body, &ev); r.Code != http.StatusOK || err != nil || ev.Type != "ERROR" || ev.Object.Code != http.StatusInternalServerError ||
		!strings.HasPrefix(ev.Object.Message, "conversion webhook for conv.example.com/v1, Kind=Sprocket failed: ") {
		t.Errorf("new watch through v2 from its initial objects: %d %s, want one ERROR event, 500, with the converter's error", r.Code, r.Body)
	}
}
