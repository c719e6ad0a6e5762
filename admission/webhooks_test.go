package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	clienttesting "k8s.io/client-go/testing"
)

// denyingWebhook answers every AdmissionReview with a denial.
func denyingWebhook(t *testing.T) (url string, caBundle []byte) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false, Result: &metav1.Status{Message: "denied by the test webhook"}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func denyingConfiguration(url string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none, fail, equivalent := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail, admissionregistrationv1.Equivalent
	timeout := int32(10)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny", ResourceVersion: "3"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       &metav1.LabelSelector{},
			ObjectSelector:          &metav1.LabelSelector{},
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

func validateConfigMapCreate(ctx context.Context, w *Webhooks) error {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	attr := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", "c",
		corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"})
	return w.Validate(ctx, attr, admission.NewObjectInterfacesFromScheme(scheme))
}

var defaultNamespace = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}

// The webhook plugins are built with the first configuration, whether it
// is in the store at start or arrives later; either way the next request
// goes to the webhook.
func TestWebhooksFromTheFirstConfiguration(t *testing.T) {
	url, ca := denyingWebhook(t)
	for _, atStart := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := NewWebhooks(nil)
		if err := w.Observe(defaultNamespace, false); err != nil {
			t.Fatal(err)
		}
		if atStart {
			if err := w.Observe(denyingConfiguration(url, ca), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if !atStart {
			if err := validateConfigMapCreate(ctx, w); err != nil {
				t.Fatalf("no configuration: %v", err)
			}
			if err := w.Observe(denyingConfiguration(url, ca), false); err != nil {
				t.Fatal(err)
			}
		}
		err := validateConfigMapCreate(ctx, w)
		if err == nil || !strings.Contains(err.Error(), "denied by the test webhook") {
			t.Errorf("configuration stored at start %v: %v, want the webhook's denial", atStart, err)
		}
	}
}

// A change fed right after Start reaches the caches even when their
// watches start late: the tracker's watch replays nothing from before it,
// so Start waits until every cache watches.
func TestStartWaitsForTheCachesWatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWebhooks(nil)
	w.cache.tracker = lateWatches{w.cache.tracker}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Observe(defaultNamespace, false); err != nil {
		t.Fatalf("a namespace fed right after Start: %v", err)
	}
	if !w.ActiveNamespace("default") {
		t.Error("the namespace fed right after Start is not in the cache")
	}
}

// lateWatches starts every watch 100 ms late.
type lateWatches struct{ clienttesting.ObjectTracker }

func (t lateWatches) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	time.Sleep(100 * time.Millisecond)
	return t.ObjectTracker.Watch(gvr, ns, opts...)
}

// A write still in flight when kapi stops, the first to need the webhook
// plugins, gets an error instead of a panic: the stopped caches would
// refuse the plugins' handlers (kube's configuration manager panics then).
func TestPluginsAfterTheCachesStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := NewWebhooks(nil)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	informer := w.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	for deadline := time.Now().Add(5 * time.Second); !informer.IsStopped(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the caches did not stop")
		}
	}
	if _, err := w.plugins(); err == nil {
		t.Error("building the plugins over stopped caches succeeded, want an error")
	}
}

// A namespace the caches do not have yet is read from the store through
// the plugins' client, as kube's namespaceSelector matching reads storage
// when its cache lags; one the store lacks too is a NotFound.
func TestNamespaceLookupFallsBackToTheStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWebhooks(nil)
	w.ReadNamespacesFrom(func(_ context.Context, name string) (*corev1.Namespace, error) {
		if name != "fresh" {
			return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
		}
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "gold"}}}, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Observe(defaultNamespace, false); err != nil {
		t.Fatal(err)
	}
	if ns, err := w.cache.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil || ns.Name != "default" {
		t.Errorf("a cached namespace: %v %v", ns, err)
	}
	if ns, err := w.cache.CoreV1().Namespaces().Get(ctx, "fresh", metav1.GetOptions{}); err != nil || ns.Labels["tier"] != "gold" {
		t.Errorf("a namespace only the store has: %v %v, want it with its labels", ns, err)
	}
	if _, err := w.cache.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a namespace nowhere: %v, want NotFound", err)
	}
}
