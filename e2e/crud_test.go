package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindOps adapts one kind's typed client to the generic CRUD checks.
type kindOps[T any, PT interface {
	*T
	metav1.Object
}] struct {
	newObj func(name string) PT
	create func(ctx context.Context, obj PT, opts metav1.CreateOptions) (PT, error)
	get    func(ctx context.Context, name string) (PT, error)
	list   func(ctx context.Context, opts metav1.ListOptions) ([]T, string, error)
	update func(ctx context.Context, obj PT) (PT, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	// mutateSpec changes the object's spec (or webhooks).
	mutateSpec func(PT)
	// noGenerateName is set for kinds whose names are not free-form.
	noGenerateName bool
	// noGeneration is set for kinds without metadata.generation.
	noGeneration bool
	// eventualDelete is set for kinds whose deletion completes in the
	// background (namespaces, CRDs).
	eventualDelete bool
}

func testCRUD[T any, PT interface {
	*T
	metav1.Object
}](t *testing.T, name string, ops kindOps[T, PT]) {
	ctx := ctxT(t)

	obj := ops.newObj(name)
	obj.SetLabels(map[string]string{"e2e": "crud"})
	created, err := ops.create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetName() != name || created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("create returned name=%q uid=%q rv=%q created=%v", created.GetName(), created.GetUID(), created.GetResourceVersion(), created.GetCreationTimestamp())
	}
	wantGen := int64(1)
	if ops.noGeneration {
		wantGen = 0
	}
	if created.GetGeneration() != wantGen {
		t.Errorf("generation on create %d, want %d", created.GetGeneration(), wantGen)
	}

	got, err := ops.get(ctx, name)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() || got.GetLabels()["e2e"] != "crud" {
		t.Errorf("get returned uid=%q rv=%q labels=%v, want uid=%q rv=%q", got.GetUID(), got.GetResourceVersion(), got.GetLabels(), created.GetUID(), created.GetResourceVersion())
	}

	items, listRV, err := ops.list(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	found := false
	for i := range items {
		if PT(&items[i]).GetName() == name {
			found = true
		}
	}
	if !found {
		t.Errorf("list does not contain %s", name)
	}
	if rvInt(t, listRV) < rvInt(t, created.GetResourceVersion()) {
		t.Errorf("list resourceVersion %s is older than the created object's %s", listRV, created.GetResourceVersion())
	}

	// A label change keeps the generation.
	got.SetLabels(map[string]string{"e2e": "crud", "changed": "labels"})
	relabelled, err := ops.update(ctx, got)
	if err != nil {
		t.Fatalf("update labels: %v", err)
	}
	if relabelled.GetGeneration() != wantGen {
		t.Errorf("generation after a label change %d, want %d", relabelled.GetGeneration(), wantGen)
	}
	if rvInt(t, relabelled.GetResourceVersion()) <= rvInt(t, got.GetResourceVersion()) {
		t.Errorf("resourceVersion did not increase: %s -> %s", got.GetResourceVersion(), relabelled.GetResourceVersion())
	}
	if relabelled.GetLabels()["changed"] != "labels" || relabelled.GetUID() != created.GetUID() {
		t.Errorf("update returned labels=%v uid=%q", relabelled.GetLabels(), relabelled.GetUID())
	}

	// A spec change bumps it.
	if ops.mutateSpec != nil {
		ops.mutateSpec(relabelled)
		respecced, err := ops.update(ctx, relabelled)
		if err != nil {
			t.Fatalf("update spec: %v", err)
		}
		if respecced.GetGeneration() != wantGen+1 {
			t.Errorf("generation after a spec change %d, want %d", respecced.GetGeneration(), wantGen+1)
		}
		if again, err := ops.get(ctx, name); err != nil || again.GetGeneration() != wantGen+1 || again.GetResourceVersion() != respecced.GetResourceVersion() {
			t.Errorf("get after spec update: err=%v generation=%v rv=%v", err, again.GetGeneration(), again.GetResourceVersion())
		}
	}

	// An update with the stale resourceVersion of the first read.
	stale := created
	stale.SetAnnotations(map[string]string{"stale": "write"})
	if _, err := ops.update(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("update with stale resourceVersion %s: %v, want Conflict", stale.GetResourceVersion(), err)
	}

	// Duplicate create.
	if _, err := ops.create(ctx, ops.newObj(name), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: %v, want AlreadyExists", err)
	}

	// Missing object.
	if _, err := ops.get(ctx, "missing-"+name); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: %v, want NotFound", err)
	}

	// generateName.
	if !ops.noGenerateName {
		gen := ops.newObj("")
		gen.SetGenerateName("gen-")
		g, err := ops.create(ctx, gen, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("create with generateName: %v", err)
		} else {
			if !strings.HasPrefix(g.GetName(), "gen-") || len(g.GetName()) <= len("gen-") || g.GetGenerateName() != "gen-" {
				t.Errorf("generateName gen- produced name %q generateName %q", g.GetName(), g.GetGenerateName())
			}
			if _, err := ops.get(ctx, g.GetName()); err != nil {
				t.Errorf("get generated %s: %v", g.GetName(), err)
			}
		}
	}

	// dryRun=All returns the object and stores nothing.
	dry, err := ops.create(ctx, ops.newObj("dry-"+name), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Errorf("dry-run create: %v", err)
	} else if dry.GetName() != "dry-"+name {
		t.Errorf("dry-run create returned name %q", dry.GetName())
	}
	if _, err := ops.get(ctx, "dry-"+name); !apierrors.IsNotFound(err) {
		t.Errorf("get after dry-run create: %v, want NotFound", err)
	}

	// dryRun delete keeps the object.
	if err := ops.delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry-run delete: %v", err)
	}
	if _, err := ops.get(ctx, name); err != nil {
		t.Errorf("get after dry-run delete: %v", err)
	}

	if err := ops.delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if ops.eventualDelete {
		eventually(t, 10*time.Second, name+" to be deleted", func() (bool, error) {
			_, err := ops.get(ctx, name)
			return apierrors.IsNotFound(err), err
		})
	}
	if _, err := ops.get(ctx, name); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	if err := ops.delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v, want NotFound", err)
	}
}

func TestClientGoCRUD(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)

	t.Run("CustomResourceDefinition", func(t *testing.T) {
		c := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
		testCRUD(t, "gizmos.example.com", kindOps[apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinition]{
			newObj: func(name string) *apiextensionsv1.CustomResourceDefinition {
				plural, group, _ := strings.Cut(name, ".")
				return newCRD(plural, group)
			},
			// kapi's CRD controller writes the status right after each
			// write (names, conditions), as kube-apiserver's do: let it
			// settle so that later reads see a stable resourceVersion.
			create: func(ctx context.Context, o *apiextensionsv1.CustomResourceDefinition, opts metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error) {
				created, err := c.Create(ctx, o, opts)
				if err != nil || len(opts.DryRun) > 0 {
					return created, err
				}
				return settledCRD(ctx, t, k, o.Name)
			},
			get: func(ctx context.Context, n string) (*apiextensionsv1.CustomResourceDefinition, error) {
				return c.Get(ctx, n, metav1.GetOptions{})
			},
			list: func(ctx context.Context, o metav1.ListOptions) ([]apiextensionsv1.CustomResourceDefinition, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
				if _, err := c.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
					return nil, err
				}
				return settledCRD(ctx, t, k, o.Name)
			},
			delete:         c.Delete,
			mutateSpec:     func(o *apiextensionsv1.CustomResourceDefinition) { o.Spec.Names.ShortNames = []string{"gz"} },
			noGenerateName: true,
			eventualDelete: true,
		})
	})

	t.Run("MutatingWebhookConfiguration", func(t *testing.T) {
		c := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
		type T = admissionregistrationv1.MutatingWebhookConfiguration
		testCRUD(t, "mwc-crud", kindOps[T, *T]{
			newObj: newMWC,
			create: c.Create,
			get:    func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update:     func(ctx context.Context, o *T) (*T, error) { return c.Update(ctx, o, metav1.UpdateOptions{}) },
			delete:     c.Delete,
			mutateSpec: func(o *T) { o.Webhooks[0].TimeoutSeconds = ptrTo(int32(5)) },
		})
	})

	t.Run("ValidatingWebhookConfiguration", func(t *testing.T) {
		c := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		type T = admissionregistrationv1.ValidatingWebhookConfiguration
		testCRUD(t, "vwc-crud", kindOps[T, *T]{
			newObj: newVWC,
			create: c.Create,
			get:    func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *T) (*T, error) { return c.Update(ctx, o, metav1.UpdateOptions{}) },
			delete: c.Delete,
			mutateSpec: func(o *T) {
				ignore := admissionregistrationv1.Ignore
				o.Webhooks[0].FailurePolicy = &ignore
			},
		})
	})

	t.Run("ValidatingAdmissionPolicy", func(t *testing.T) {
		c := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
		type T = admissionregistrationv1.ValidatingAdmissionPolicy
		testCRUD(t, "vap-crud", kindOps[T, *T]{
			newObj: newVAP,
			// kapi's type-checking controller writes the status after
			// each spec change, as kube-apiserver's does: let it settle.
			create: func(ctx context.Context, o *T, opts metav1.CreateOptions) (*T, error) {
				created, err := c.Create(ctx, o, opts)
				if err != nil || len(opts.DryRun) > 0 {
					return created, err
				}
				return settledPolicy(ctx, t, k, created.Name), nil
			},
			get: func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *T) (*T, error) {
				if _, err := c.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
					return nil, err
				}
				return settledPolicy(ctx, t, k, o.Name), nil
			},
			delete: c.Delete,
			mutateSpec: func(o *T) {
				o.Spec.Validations = append(o.Spec.Validations, admissionregistrationv1.Validation{Expression: "object.spec.replicas >= 0"})
			},
		})
	})

	t.Run("ValidatingAdmissionPolicyBinding", func(t *testing.T) {
		c := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
		type T = admissionregistrationv1.ValidatingAdmissionPolicyBinding
		testCRUD(t, "binding-crud", kindOps[T, *T]{
			newObj: func(name string) *T { return newVAPBinding(name, "vap-crud") },
			create: c.Create,
			get:    func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *T) (*T, error) { return c.Update(ctx, o, metav1.UpdateOptions{}) },
			delete: c.Delete,
			mutateSpec: func(o *T) {
				o.Spec.ValidationActions = append(o.Spec.ValidationActions, admissionregistrationv1.Audit)
			},
		})
	})

	t.Run("DeviceClass", func(t *testing.T) {
		c := k.Client.ResourceV1beta2().DeviceClasses()
		type T = resourcev1beta2.DeviceClass
		testCRUD(t, "dc-crud.example.com", kindOps[T, *T]{
			newObj: newDeviceClass,
			create: c.Create,
			get:    func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *T) (*T, error) { return c.Update(ctx, o, metav1.UpdateOptions{}) },
			delete: c.Delete,
			mutateSpec: func(o *T) {
				o.Spec.Selectors = append(o.Spec.Selectors, resourcev1beta2.DeviceSelector{CEL: &resourcev1beta2.CELDeviceSelector{Expression: "true"}})
			},
		})
	})

	t.Run("Namespace", func(t *testing.T) {
		c := k.Client.CoreV1().Namespaces()
		type T = corev1.Namespace
		testCRUD(t, "ns-crud", kindOps[T, *T]{
			newObj: newNamespace,
			create: c.Create,
			get:    func(ctx context.Context, n string) (*T, error) { return c.Get(ctx, n, metav1.GetOptions{}) },
			list: func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
				l, err := c.List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.ResourceVersion, nil
			},
			update: func(ctx context.Context, o *T) (*T, error) { return c.Update(ctx, o, metav1.UpdateOptions{}) },
			delete: c.Delete,
			// Namespaces have no metadata.generation, and their deletion
			// finishes once the namespace is emptied.
			noGeneration:   true,
			eventualDelete: true,
		})
	})
}

func ptrTo[T any](v T) *T { return &v }

// The webhook defaults kube-apiserver materialises on create.
func TestWebhookDefaults(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "defaults.example.com",
			SideEffects:             ptrTo(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}
	created, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Read back through the dynamic client to see the stored JSON.
	u, err := k.Dyn.Resource(gvrVWCs).Get(ctx, "defaults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	if len(hooks) != 1 {
		t.Fatalf("webhooks %v", hooks)
	}
	h := hooks[0].(map[string]interface{})
	expect := func(what string, got, want interface{}) {
		t.Helper()
		if fmtJSON(got) != fmtJSON(want) {
			t.Errorf("%s = %s, want %s", what, fmtJSON(got), fmtJSON(want))
		}
	}
	expect("failurePolicy", h["failurePolicy"], "Fail")
	expect("matchPolicy", h["matchPolicy"], "Equivalent")
	expect("timeoutSeconds", h["timeoutSeconds"], 10)
	expect("namespaceSelector", h["namespaceSelector"], map[string]interface{}{})
	expect("objectSelector", h["objectSelector"], map[string]interface{}{})
	rules := h["rules"].([]interface{})
	expect("rules[0].scope", rules[0].(map[string]interface{})["scope"], "*")
	port, _, _ := unstructured.NestedInt64(h, "clientConfig", "service", "port")
	expect("clientConfig.service.port", port, 443)
	if _, ok := h["reinvocationPolicy"]; ok {
		t.Errorf("a validating webhook got reinvocationPolicy")
	}

	// The typed answer to the create already carries them.
	w := created.Webhooks[0]
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail ||
		w.MatchPolicy == nil || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
		w.TimeoutSeconds == nil || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil ||
		w.Rules[0].Scope == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("create response lacks defaults: %s", fmtJSON(w))
	}

	// A mutating webhook also gets reinvocationPolicy Never.
	m, err := k.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, newMWC("mdefaults"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rp := m.Webhooks[0].ReinvocationPolicy; rp == nil || *rp != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("reinvocationPolicy %v, want Never", rp)
	}
	if m.Webhooks[0].TimeoutSeconds == nil || *m.Webhooks[0].TimeoutSeconds != 10 {
		t.Errorf("mutating timeoutSeconds %v, want 10", m.Webhooks[0].TimeoutSeconds)
	}

	// A VAP gets failurePolicy Fail and matchPolicy Equivalent.
	p, err := k.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, newVAP("pdefaults"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("VAP failurePolicy %v, want Fail", p.Spec.FailurePolicy)
	}
	mc := p.Spec.MatchConstraints
	if mc.MatchPolicy == nil || *mc.MatchPolicy != admissionregistrationv1.Equivalent || mc.NamespaceSelector == nil || mc.ObjectSelector == nil {
		t.Errorf("VAP matchConstraints defaults missing: %s", fmtJSON(mc))
	}
}

// The dynamic client round-trips the kinds as unstructured objects.
func TestDynamicCRUD(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)

	// A policy through v1beta1, read through v1.
	beta := k.Dyn.Resource(gvrVAPsBeta)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1beta1",
		"kind":       "ValidatingAdmissionPolicy",
		"metadata":   map[string]interface{}{"name": "dyn-policy", "labels": map[string]interface{}{"via": "dynamic"}},
		"spec": map[string]interface{}{
			"matchConstraints": map[string]interface{}{"resourceRules": []interface{}{map[string]interface{}{
				"apiGroups": []interface{}{""}, "apiVersions": []interface{}{"v1"}, "operations": []interface{}{"CREATE"}, "resources": []interface{}{"configmaps"},
			}}},
			"validations": []interface{}{map[string]interface{}{"expression": "true"}},
		},
	}}
	created, err := beta.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v1beta1: %v", err)
	}
	if created.GetAPIVersion() != "admissionregistration.k8s.io/v1beta1" || created.GetKind() != "ValidatingAdmissionPolicy" {
		t.Errorf("create answered %s %s", created.GetAPIVersion(), created.GetKind())
	}
	settledPolicy(ctx, t, k, "dyn-policy")
	v1, err := k.Dyn.Resource(gvrVAPs).Get(ctx, "dyn-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.GetAPIVersion() != "admissionregistration.k8s.io/v1" || v1.GetUID() != created.GetUID() {
		t.Errorf("v1 read: %s uid %s, want v1 uid %s", v1.GetAPIVersion(), v1.GetUID(), created.GetUID())
	}
	typed, err := k.Client.AdmissionregistrationV1beta1().ValidatingAdmissionPolicies().Get(ctx, "dyn-policy", metav1.GetOptions{})
	if err != nil || typed.UID != created.GetUID() {
		t.Errorf("typed v1beta1 get: %v uid %v", err, typed.UID)
	}

	list, err := beta.List(ctx, metav1.ListOptions{LabelSelector: "via=dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.GetAPIVersion() != "admissionregistration.k8s.io/v1beta1" || list.GetKind() != "ValidatingAdmissionPolicyList" {
		t.Errorf("list: %d items, %s %s", len(list.Items), list.GetAPIVersion(), list.GetKind())
	}

	// Update through v1.
	unstructured.SetNestedSlice(v1.Object, []interface{}{map[string]interface{}{"expression": "true"}, map[string]interface{}{"expression": "1 == 1"}}, "spec", "validations")
	updated, err := k.Dyn.Resource(gvrVAPs).Update(ctx, v1, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update through v1: %v", err)
	}
	if updated.GetGeneration() != 2 {
		t.Errorf("generation %d after a spec update, want 2", updated.GetGeneration())
	}
	// Update through v1beta1 with the v1 resourceVersion now stale.
	created.SetLabels(map[string]string{"x": "y"})
	if _, err := beta.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update through v1beta1: %v, want Conflict", err)
	}

	// Delete with a precondition on the uid.
	uid := updated.GetUID()
	if err := beta.Delete(ctx, "dyn-policy", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := k.Dyn.Resource(gvrVAPs).Get(ctx, "dyn-policy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}

	// DeviceClass DELETE answers with the object, not a Status.
	dc := newDeviceClass("dyn.example.com")
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "DELETE", collectionPath(gvrDevClasses)+"/dyn.example.com", nil)
	if r.Code != 200 {
		t.Fatalf("DELETE deviceclass: %d %s", r.Code, r.Body)
	}
	var del unstructured.Unstructured
	if err := del.UnmarshalJSON(r.Body); err != nil || del.GetKind() != "DeviceClass" || del.GetName() != "dyn.example.com" {
		t.Errorf("DELETE deviceclass answered %s (err %v), want the DeviceClass", r.Body, err)
	}
	// Other kinds answer a Success Status.
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("dyn-vwc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = k.do(t, "DELETE", collectionPath(gvrVWCs)+"/dyn-vwc", nil)
	st := r.Status(t)
	if r.Code != 200 || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "dyn-vwc" {
		t.Errorf("DELETE vwc: %d %s", r.Code, r.Body)
	}
}

// resourceVersions come from one counter across every kind.
func TestResourceVersionsIncreaseAcrossKinds(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	var rvs []string
	record := func(what string, m metav1.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rvs = append(rvs, what+"="+m.GetResourceVersion())
		if len(rvs) > 1 {
			prev := rvs[len(rvs)-2]
			if rvInt(t, prev[strings.Index(prev, "=")+1:]) >= rvInt(t, m.GetResourceVersion()) {
				t.Errorf("resourceVersions do not increase: %v", rvs)
			}
		}
	}
	a := k.Client.AdmissionregistrationV1()
	for i := 0; i < 3; i++ {
		ns, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("rv-ns-"+string(rune('a'+i))), metav1.CreateOptions{})
		record("namespace", ns, err)
		vwc, err := a.ValidatingWebhookConfigurations().Create(ctx, newVWC("rv-vwc-"+string(rune('a'+i))), metav1.CreateOptions{})
		record("vwc", vwc, err)
		mwc, err := a.MutatingWebhookConfigurations().Create(ctx, newMWC("rv-mwc-"+string(rune('a'+i))), metav1.CreateOptions{})
		record("mwc", mwc, err)
		dc, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("rv"+string(rune('a'+i))+".example.com"), metav1.CreateOptions{})
		record("deviceclass", dc, err)
		crd, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, newCRD("rv"+string(rune('a'+i))+"s", "example.com"), metav1.CreateOptions{})
		record("crd", crd, err)
		vwc.Labels = map[string]string{"round": string(rune('a' + i))}
		vwc, err = a.ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{})
		record("vwc update", vwc, err)
	}
	// A list's resourceVersion is at least the newest write.
	l, err := a.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := rvs[len(rvs)-1]
	if rvInt(t, l.ResourceVersion) < rvInt(t, last[strings.Index(last, "=")+1:]) {
		t.Errorf("list resourceVersion %s is older than the last write %s", l.ResourceVersion, last)
	}
}

// A create may not carry a resourceVersion (kube's storage refuses it:
// the classic mistake of re-creating an object read before); a dry run
// may, as under kube-apiserver.
func TestCreateWithResourceVersion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	ns := newNamespace("rv-set")
	ns.ResourceVersion = "5"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "resourceVersion should not be set on objects to be created") {
		t.Errorf("create of a namespace with a resourceVersion: %v, want 400 resourceVersion should not be set on objects to be created", err)
	}
	if _, err := k.Client.CoreV1().Namespaces().Get(ctx, "rv-set", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the refused create: %v, want NotFound", err)
	}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry-run create with a resourceVersion: %v", err)
	}
	crd := newCRD("rvsets", "example.com")
	created, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the CRD gone", func() (bool, error) {
		_, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, created.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Re-creating the object as it was read.
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, created, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("re-creating a CRD as read: %v, want 400", err)
	}
}

// PUT rules of kube-apiserver's generic registry: which kinds need
// metadata.resourceVersion, a uid in the body is a precondition, and an
// update never creates.
func TestUpdateSemantics(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	a := k.Client.AdmissionregistrationV1()
	if _, err := a.ValidatingWebhookConfigurations().Create(ctx, newVWC("vwc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MutatingWebhookConfigurations().Create(ctx, newMWC("mwc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ValidatingAdmissionPolicies().Create(ctx, newVAP("vap"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ValidatingAdmissionPolicyBindings().Create(ctx, newVAPBinding("binding", "vap"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, newCRD("puts", "example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass("dc.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("ns"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		name string
		// unconditional is the strategy's AllowUnconditionalUpdate in
		// kube-apiserver.
		unconditional bool
	}{
		{gvrVWCs, "vwc", false},
		{gvrMWCs, "mwc", false},
		{gvrVAPs, "vap", false},
		{gvrVAPsBeta, "vap", false},
		{gvrBindings, "binding", false},
		{gvrCRDs, "puts.example.com", false},
		{gvrDevClasses, "dc.example.com", true},
		{gvrNamespaces, "ns", true},
	} {
		t.Run(tc.gvr.Version+"/"+tc.gvr.Resource, func(t *testing.T) {
			cur, err := k.Dyn.Resource(tc.gvr).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path := collectionPath(tc.gvr) + "/" + tc.name

			// Without metadata.resourceVersion: none, "0" (kube-apiserver's
			// store parses it as a number), or removed by a patch.
			unconditionalWrite := func(what string, r httpResult) {
				t.Helper()
				if tc.unconditional {
					if r.Code != http.StatusOK {
						t.Errorf("unconditional %s: %d %s, want 200", what, r.Code, r.Body)
					}
					return
				}
				// Worded as kube-apiserver's store words it: under the
				// resource's name, the value parsed.
				want := fmt.Sprintf(`%s "%s" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`, schema.GroupResource{Group: tc.gvr.Group, Resource: tc.gvr.Resource}, tc.name)
				st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, want)
				if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "metadata.resourceVersion" {
					t.Errorf("%s: causes %+v, want metadata.resourceVersion", what, st.Details)
				}
			}
			for _, rv := range []string{"", "0"} {
				body := cur.DeepCopy()
				body.SetResourceVersion(rv)
				body.SetLabels(map[string]string{"unconditional": "yes"})
				unconditionalWrite(fmt.Sprintf("PUT with resourceVersion %q", rv), k.do(t, "PUT", path, mustJSON(t, body.Object)))
			}
			unconditionalWrite("JSON patch removing the resourceVersion", k.do(t, "PATCH", path,
				[]byte(`[{"op":"remove","path":"/metadata/resourceVersion"},{"op":"add","path":"/metadata/labels","value":{"unconditional":"patched"}}]`),
				"Content-Type: application/json-patch+json"))
			// The resourceVersion is a number: with a leading zero it is
			// the same one.
			cur, err = k.Dyn.Resource(tc.gvr).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			body := cur.DeepCopy()
			body.SetResourceVersion("0" + cur.GetResourceVersion())
			body.SetLabels(map[string]string{"leading": "zero"})
			r := k.do(t, "PUT", path, mustJSON(t, body.Object))
			if r.Code != http.StatusOK {
				t.Errorf("PUT with the resourceVersion written with a leading zero: %d %s, want 200", r.Code, r.Body)
			}
			// One that is not a number matches no stored version: a
			// conflict (kube-apiserver answers its parse error as a 500).
			body.SetResourceVersion("abc")
			expectStatus(t, k.do(t, "PUT", path, mustJSON(t, body.Object)), http.StatusConflict, metav1.StatusReasonConflict, "the object has been modified")

			// A uid in the body is a precondition.
			cur, err = k.Dyn.Resource(tc.gvr).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			body = cur.DeepCopy()
			body.SetUID("4c1cd4a4-0000-4000-8000-000000000000")
			body.SetLabels(map[string]string{"uid": "wrong"})
			r = k.do(t, "PUT", path, mustJSON(t, body.Object))
			expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict, "Precondition failed: UID in precondition: 4c1cd4a4-0000-4000-8000-000000000000")
			after, err := k.Dyn.Resource(tc.gvr).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil || after.GetLabels()["uid"] == "wrong" {
				t.Errorf("a PUT with a wrong uid was applied: %v %v", err, after.GetLabels())
			}

			// PUT of a missing object does not create it.
			missing := cur.DeepCopy()
			missing.SetName("missing-" + tc.name)
			missing.SetResourceVersion("")
			missing.SetUID("")
			r = k.do(t, "PUT", collectionPath(tc.gvr)+"/missing-"+tc.name, mustJSON(t, missing.Object))
			expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound)
		})
	}
}

// settledCRD waits until kapi's CRD controller has accepted the CRD's
// current names and established it, and returns the CRD then.
func settledCRD(ctx context.Context, t testing.TB, k *kapi, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	var crd *apiextensionsv1.CustomResourceDefinition
	var err error
	waitFor(t, "CRD "+name+" to settle", func() bool {
		crd, err = k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return true
		}
		established := false
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		return established && reflect.DeepEqual(crd.Status.AcceptedNames.ShortNames, crd.Spec.Names.ShortNames)
	})
	return crd, err
}

// A built-in kind's JSON is its Go type's, fields in their order (kind and
// apiVersion first, metadata's name first), as kube-apiserver encodes its
// typed objects: objects, lists (items without kind), watch events and a
// Table row's object. A custom resource's has its keys sorted, as kube's
// unstructured encoding writes them.
func TestJSONFieldOrder(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("order"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCRD(t, k, newCRD("orders", "order.example.com"))
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "order.example.com/v1", "kind": "Order", "metadata": map[string]any{"name": "one"}, "spec": map[string]any{"size": int64(1)}}}
	if _, err := k.Dyn.Resource(schema.GroupVersionResource{Group: "order.example.com", Version: "v1", Resource: "orders"}).Namespace("default").Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, accept, prefix string }{
		{"/api/v1/namespaces/default", "", `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default","uid":"`},
		{"/api/v1/namespaces", "", `{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"`},
		{"/api/v1/namespaces?fieldSelector=metadata.name%3Ddefault", "", `"items":[{"metadata":{"name":"default","uid":"`},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/order", "", `{"kind":"ValidatingWebhookConfiguration","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"name":"order",`},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/order", "", `"webhooks":[{"name":"validate.example.com","clientConfig":{"url":"https://validate.example.com/order"},"rules":[{"operations":["CREATE"],"apiGroups":[""],`},
		{"/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3Ddefault&timeoutSeconds=1", "", `{"type":"ADDED","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default",`},
		{"/api/v1/namespaces/default?includeObject=Object", "application/json;as=Table;g=meta.k8s.io;v=v1", `"object":{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default",`},
		{"/apis/order.example.com/v1/namespaces/default/orders/one", "", `{"apiVersion":"order.example.com/v1","kind":"Order","metadata":{"creationTimestamp":"`},
		{"/apis/order.example.com/v1/namespaces/default/orders", "", `{"apiVersion":"order.example.com/v1","items":[{"apiVersion":"order.example.com/v1","kind":"Order","metadata":{"creationTimestamp":"`},
	} {
		var headers []string
		if c.accept != "" {
			headers = append(headers, "Accept: "+c.accept)
		}
		r := k.do(t, "GET", c.path, nil, headers...)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), c.prefix) {
			t.Errorf("GET %s: %d %.400s\nwant it to hold %s", c.path, r.Code, r.Body, c.prefix)
		}
	}
}
