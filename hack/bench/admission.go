package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// admission: Widget creates per second (32 clients, 8 s each) on one
// fresh kapi with no admission configured, with one ValidatingAdmissionPolicy
// bound, with none again, and with one local HTTPS validating webhook that
// admits everything; the latter two as a ratio to none.
func (b *bench) admission() (err error) {
	k, err := startKapi(b.bin, b.tmp, kapiArgs(b.sync)...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Stop()) }()
	defer profileKapi(k, b.profDir, "admission")()
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	const ns = "default"
	if _, err := installCRD(ctx, k, ns); err != nil {
		return err
	}
	const denyLabel = "bench.kapi.dev/deny"
	probes := 0
	// probe creates a Widget, with the label the policy denies if deny.
	probe := func(deny bool) error {
		probes++
		var labels map[string]string
		if deny {
			labels = map[string]string{denyLabel: "yes"}
		}
		_, err := k.createWidget(ctx, ns, fmt.Sprintf("probe-%05d", probes), labels)
		return err
	}
	// waitFor retries cond every millisecond for at most 30 s.
	waitFor := func(what string, cond func() bool) error {
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: not within 30 s", what)
			}
		}
		return nil
	}
	measure := func(label string) loadResult {
		return runLoad(k, 1<<30, 32, 8*time.Second, func(i int) error {
			_, err := k.createWidget(ctx, ns, fmt.Sprintf("%s-%06d", label, i), nil)
			return err
		})
	}
	const prefix = "create with admission, 32 clients (8 s)"

	// No admission configured, before and after the policy's run, to see
	// drift of the machine (fsync latency, other load).
	none := measure("none")
	b.r.load(prefix+", none configured", none, loadTargets{})

	// One policy with one CEL expression, bound to Widget creates. It
	// denies the deny label, so a denied probe shows it is in force.
	rules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{widgetGroup}, APIVersions: []string{"*"}, Resources: []string{"widgets"}},
	}}}
	vaps := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := vaps.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!has(object.metadata.labels) || !(%q in object.metadata.labels)", denyLabel),
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	bindings := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := bindings.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "bench", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var probeErr error
	if err := waitFor("the policy to deny", func() bool {
		probeErr = probe(true)
		return apierrors.IsInvalid(probeErr) && strings.Contains(probeErr.Error(), "denied request")
	}); err != nil {
		return fmt.Errorf("%w (last create: %v)", err, probeErr)
	}
	policy := measure("policy")
	b.r.load(prefix+", one ValidatingAdmissionPolicy", policy, loadTargets{})
	if err := bindings.Delete(ctx, "bench", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := waitFor("the policy to be unbound", func() bool { return probe(true) == nil }); err != nil {
		return err
	}
	none2 := measure("none2")
	b.r.load(prefix+", none configured again", none2, loadTargets{})
	if none.Ops > 0 && none2.Ops > 0 {
		b.r.atLeast(prefix+", policy / none (mean of the runs before and after)",
			policy.PerSec()/((none.PerSec()+none2.PerSec())/2), "ratio", 0.9)
	}

	// One HTTPS webhook on loopback, trusted through its caBundle.
	caPEM, cert, err := webhookCerts()
	if err != nil {
		return err
	}
	hook := &allowingWebhook{}
	srv := httptest.NewUnstartedServer(hook)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// Count the connections kapi opens to the webhook: it should keep a
	// few alive, not open one per call.
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	url := srv.URL + "/validate"
	sideEffects := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "widgets.bench.kapi.dev", SideEffects: &sideEffects, AdmissionReviewVersions: []string{"v1"},
			ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:          []admissionregistrationv1.RuleWithOperations{rules[0].RuleWithOperations},
			TimeoutSeconds: &timeout,
		}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitFor("the webhook to be called", func() bool {
		probeErr = probe(false)
		return hook.calls.Load() > 0
	}); err != nil {
		return fmt.Errorf("%w (last create: %v)", err, probeErr)
	}
	before, connsBefore := hook.calls.Load(), conns.Load()
	webhook := measure("webhook")
	b.r.load(prefix+", one HTTPS webhook", webhook, loadTargets{})
	if none2.Ops > 0 {
		b.r.add(prefix+", webhook / none (the run before it)", webhook.PerSec()/none2.PerSec(), "ratio")
	}
	b.r.add(prefix+", one HTTPS webhook: connections kapi opened to it", float64(conns.Load()-connsBefore), "connections")
	if calls := hook.calls.Load() - before; calls < int64(webhook.Ops) {
		b.r.fail(prefix+", webhook calls", fmt.Errorf("the webhook was called %d times for %d creates", calls, webhook.Ops))
	}
	return nil // Stop, deferred, reports a kapi that exited
}

// allowingWebhook admits every request and counts them.
type allowingWebhook struct {
	calls atomic.Int64
}

func (h *allowingWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

// webhookCerts makes a self-signed CA and a serving certificate for
// 127.0.0.1 it signs; it returns the CA's PEM (the caBundle).
func webhookCerts() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kapi bench webhook CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
