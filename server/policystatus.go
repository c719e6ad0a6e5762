package server

import (
	"context"
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/storage"
)

const policyStorageResource = "admissionregistration.k8s.io/validatingadmissionpolicies"

// policyStatusController type-checks every ValidatingAdmissionPolicy
// against the schemas of the kinds it matches and of its paramKind, with
// kube-apiserver's own type checker, and records the result in
// status.typeChecking and status.observedGeneration, as kube-apiserver's
// controller does.
type policyStatusController struct {
	s *Server
	// checker is built at the first check: its schema resolver reads every
	// built-in OpenAPI definition, milliseconds kapi's start need not wait.
	checker func() *validating.TypeChecker
	// queue holds policy names; true asks for a check even of a
	// generation already checked (a schema it depends on changed).
	queue *workQueue[string, bool]
}

func newPolicyStatusController(s *Server) *policyStatusController {
	return &policyStatusController{
		s: s,
		checker: sync.OnceValue(func() *validating.TypeChecker {
			schemas := openapi.BuiltinSchemaResolver(builtin.Scheme).Combine(customResourceSchemas{s})
			return &validating.TypeChecker{SchemaResolver: schemas, RestMapper: restMapper{s}}
		}),
		queue: newWorkQueue[string, bool](),
	}
}

func (c *policyStatusController) start(ctx context.Context) error {
	c.s.store.Subscribe(func(ev storage.Event) {
		if ev.Object.Resource == policyStorageResource && ev.Op != storage.OpDeleted {
			c.queue.add(ev.Object.Name, false)
		}
	})
	if err := c.recheckAll(ctx, false); err != nil {
		return err
	}
	go c.queue.run(ctx, func(ctx context.Context, name string, force bool) bool {
		if err := c.sync(ctx, name, force); err != nil {
			c.s.log.Warn("type-checking a policy", "policy", name, "err", err)
			return false
		}
		return true
	})
	return nil
}

// recheckAll queues every policy; force checks again the generations
// already checked (the CRD controller calls it when a served custom
// resource's schema may have changed).
func (c *policyStatusController) recheckAll(ctx context.Context, force bool) error {
	res, _ := c.s.reg.Get("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
	items, _, err := c.s.listObjects(ctx, res, "", "", &metainternalversion.ListOptions{})
	for _, obj := range items {
		c.queue.add(obj.GetName(), force)
	}
	return err
}

func (c *policyStatusController) sync(ctx context.Context, name string, force bool) error {
	res, _ := c.s.reg.Get("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
	obj, _, err := c.s.getObject(ctx, res, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, policy); err != nil {
		return err
	}
	// As kube's controller: a generation is checked once (force: kapi
	// checks again when a schema the policy reads may have changed).
	checked := policy.Generation <= policy.Status.ObservedGeneration
	if checked && !force {
		return nil
	}
	warnings := c.checker().Check(policy)
	if checked && policy.Status.TypeChecking != nil && equality.Semantic.DeepEqual(warnings, policy.Status.TypeChecking.ExpressionWarnings) {
		return nil
	}
	// The status is applied, forced, by the controller's own field
	// manager, as kube's controller applies it.
	req := &resourceRequest{res: res, version: "v1", name: name, subresource: "status", user: apiserverUser}
	fm, err := c.s.fieldManagers.get(res, "v1", "status")
	if err != nil {
		return err
	}
	applied := policyStatusConfig(policy, warnings)
	_, err = c.s.updateObject(ctx, req, false, true, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if current.GetGeneration() != policy.Generation {
			return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("changed while type-checking"))
		}
		out, err := fm.Apply(current, applied.DeepCopy(), policyStatusManager, true)
		if err != nil {
			return nil, err
		}
		merged, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("apply returned %T", out)
		}
		return merged, nil
	})
	if apierrors.IsConflict(err) {
		c.queue.add(name, force)
		return nil
	}
	return err
}

// policyStatusManager is the field manager of kube's policy status
// controller.
const policyStatusManager = "validatingadmissionpolicy-status"

// policyStatusConfig is the apply configuration of a policy's checked
// status: its generation and the type checker's warnings.
func policyStatusConfig(policy *admissionregistrationv1.ValidatingAdmissionPolicy, warnings []admissionregistrationv1.ExpressionWarning) *unstructured.Unstructured {
	typeChecking := map[string]interface{}{}
	if len(warnings) > 0 {
		list := make([]interface{}, len(warnings))
		for i, w := range warnings {
			list[i] = map[string]interface{}{"fieldRef": w.FieldRef, "warning": w.Warning}
		}
		typeChecking["expressionWarnings"] = list
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingAdmissionPolicy",
		"metadata":   map[string]interface{}{"name": policy.Name},
		"status":     map[string]interface{}{"observedGeneration": policy.Generation, "typeChecking": typeChecking},
	}}
}

// customResourceSchemas resolves the schema of a custom resource kind from
// its served OpenAPI document.
type customResourceSchemas struct{ s *Server }

func (r customResourceSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	res, ok := r.s.resourceForKind(gvk)
	if !ok || res.OpenAPIV3 == nil {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	doc, err := res.OpenAPIV3(gvk.Version)
	if err != nil || doc.Components == nil {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	for name, s := range doc.Components.Schemas {
		var kinds []map[string]interface{}
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &kinds); err != nil {
			continue
		}
		for _, k := range kinds {
			if k["group"] == gvk.Group && k["version"] == gvk.Version && k["kind"] == gvk.Kind {
				return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
					def, ok := doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
					return def, ok
				}, "#/components/schemas/"+name)
			}
		}
	}
	return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
}
