package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// allowingWebhook admits every request and counts them.
type allowingWebhook struct {
	mu    sync.Mutex
	calls int
}

func (h *allowingWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	json.NewEncoder(w).Encode(review)
}

// BenchmarkAdmissionThroughput: DeviceClass creates per second (32
// clients) with no admission configured, with one ValidatingAdmissionPolicy
// bound to them, and with one local HTTPS validating webhook for them.
func BenchmarkAdmissionThroughput(b *testing.B) {
	const n, clients = 2000, 32
	for i := 0; i < b.N; i++ {
		k := startKapi(b)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		dcs := k.Client.ResourceV1beta2().DeviceClasses()
		run := func(label string) float64 {
			names := make(chan string, n)
			for j := 0; j < n; j++ {
				names <- fmt.Sprintf("%s-%05d", label, j)
			}
			close(names)
			var wg sync.WaitGroup
			start := time.Now()
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for name := range names {
						if _, err := dcs.Create(ctx, newDeviceClass(name), metav1.CreateOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			rate := float64(n) / time.Since(start).Seconds()
			b.ReportMetric(rate, label+"-creates/s")
			return rate
		}
		none := run("none")

		// One policy bound to DeviceClass creates.
		rules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"deviceclasses"}},
		}}}
		if _, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
				Validations:      []admissionregistrationv1.Validation{{Expression: "!object.metadata.name.startsWith('probe-deny')"}},
			},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "bench", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// Measure once the policy is in force.
		for p := 0; ; p++ {
			if _, err := dcs.Create(ctx, newDeviceClass(fmt.Sprintf("probe-deny-%d", p)), metav1.CreateOptions{}); err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		policy := run("policy")
		if err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "bench", metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}

		// One local HTTPS validating webhook.
		caPEM, cert := webhookCerts(b, "bench.webhooks.svc")
		hook := &allowingWebhook{}
		srv := httptest.NewUnstartedServer(hook)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		url := srv.URL + "/validate"
		none2 := admissionregistrationv1.SideEffectClassNone
		if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "bench.example.com", SideEffects: &none2, AdmissionReviewVersions: []string{"v1"},
				ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
				Rules:          []admissionregistrationv1.RuleWithOperations{rules[0].RuleWithOperations},
				TimeoutSeconds: ptr.To[int32](5),
			}},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// Measure once the webhook is called.
		for p := 0; ; p++ {
			if _, err := dcs.Create(ctx, newDeviceClass(fmt.Sprintf("probe-hook-%d", p)), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			hook.mu.Lock()
			called := hook.calls > 0
			hook.mu.Unlock()
			if called {
				break
			}
		}
		webhook := run("webhook")
		if hook.calls < n {
			b.Errorf("the webhook was called %d times for %d creates", hook.calls, n)
		}
		srv.Close()
		b.ReportMetric(policy/none, "policy-ratio")
		b.ReportMetric(webhook/none, "webhook-ratio")
		cancel()
		k.Stop(b)
	}
}
