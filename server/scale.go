package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/rest"
	scaleclient "k8s.io/client-go/scale"
	sigsjson "sigs.k8s.io/json"

	"github.com/kapi-dev/kapi/server/registry"
)

// The /scale subresource of custom resources shows and sets a replica
// count of the object as an autoscaling/v1 Scale, at the paths its CRD
// names, as kube-apiserver does.

var scaleGroupKind = schema.GroupKind{Group: "autoscaling", Kind: "Scale"}

func replicasPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// scaleOf builds the Scale of cr; found tells whether the spec replicas
// path holds a value.
func scaleOf(cr *unstructured.Unstructured, sc *registry.Scale) (*autoscalingv1.Scale, bool, error) {
	spec, found, err := unstructured.NestedInt64(cr.Object, replicasPath(sc.SpecReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	status, _, err := unstructured.NestedInt64(cr.Object, replicasPath(sc.StatusReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	var selector string
	if sc.LabelSelectorPath != "" {
		if selector, _, err = unstructured.NestedString(cr.Object, replicasPath(sc.LabelSelectorPath)...); err != nil {
			return nil, false, err
		}
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: cr.GetName(), Namespace: cr.GetNamespace(), UID: cr.GetUID(),
			ResourceVersion: cr.GetResourceVersion(), CreationTimestamp: cr.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(spec)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status), Selector: selector},
	}, found, nil
}

func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	sc := req.res.ScaleIn(req.version)
	switch r.Method {
	case http.MethodGet:
		// As kube-apiserver's get handler: the form first (a 406 before
		// a 404).
		out, err := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList")
		if err != nil {
			writeError(w, r, err)
			return
		}
		// As kube-apiserver's scale storage, which reads the custom
		// resource as a get of it does.
		cr, err := s.getRequested(r, req)
		if err == nil {
			err = req.res.Strategy.Convert(cr, req.version)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		// As kube-apiserver's scale storage: a replicas field of the wrong
		// type is its accessor's error as it is (a 500 with no reason), a
		// missing spec replicas field an InternalError.
		scale, found, err := scaleOf(cr, sc)
		if err == nil && !found {
			err = apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", sc.SpecReplicasPath))
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeScale(w, r, sc, out, scale)
	case http.MethodPut, http.MethodPatch:
		s.updateScale(w, r, req)
	default:
		// As kube-apiserver words it: the resource, not its subresource.
		writeError(w, r, apierrors.NewMethodNotSupported(req.res.GroupResource(), verbOf(r.Method)))
	}
}

// updateScale runs a PUT, PATCH or server-side apply of /scale: the new
// Scale's spec.replicas goes into the custom resource, through the
// resource's update rules. As kube-apiserver does, the write is tracked on
// the Scale, whose managedFields are mapped from and back to the custom
// resource's (managedfields.ScaleHandler): a manager that sets replicas
// through /scale owns the resource's replicas path.
func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	sc := req.res.ScaleIn(req.version)
	var body []byte
	var mt string
	var err error
	if r.Method == http.MethodPatch {
		// As kube-apiserver for a custom resource's subresources: no
		// strategic merge patch.
		body, mt, err = readBody(r, string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType))
	} else {
		// A Scale in any media type of kube-apiserver's scale endpoint,
		// whose serializer (autoscaling/v1's codecs) has protobuf.
		allowed := []string{"application/json", "application/yaml", protobufMediaType}
		body, mt, _, _, err = readObjectBody(r, &schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, allowed...)
		if ye := (*yamlBodyError)(nil); errors.As(err, &ye) {
			err = scaleBodyUndecodable()
		}
		if pe := (*protobufBodyError)(nil); errors.As(err, &pe) {
			err = scaleBodyUndecodable()
		}
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	patchType := types.PatchType(mt)
	req.serverSideApply = patchType == types.ApplyYAMLPatchType
	// A PATCH's options are validated as PatchOptions, every error in one
	// Invalid PatchOptions, as kube-apiserver's patch handler does.
	var force bool
	if r.Method == http.MethodPatch {
		popts, err := parsePatchOptions(r, patchType)
		if err != nil {
			writeError(w, r, err)
			return
		}
		force = popts.Force != nil && *popts.Force
	}
	opts, err := parseUpdateOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// Admission sees the client's options (a patch's as UpdateOptions),
	// as kube-apiserver passes them.
	req.options = opts.raw
	fm, err := s.fieldManagers.get(req.res, req.version, "scale")
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	// A PUT's Scale is decoded and its namespace and name checked before
	// the object is read, as kube-apiserver's update handler does; its
	// uid and resourceVersion are preconditions (without a resourceVersion
	// the update applies to the current object).
	var put *autoscalingv1.Scale
	if r.Method == http.MethodPut {
		if put, err = decodeScale(r.Context(), body, opts.fieldValidation, false); err == nil {
			logRequestObject(r.Context(), req, put)
			if err = rest.EnsureObjectNamespaceMatchesRequestNamespace(req.namespace, put); err == nil {
				err = checkName(put.Name, req.name)
			}
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
	}
	gv := schema.GroupVersion{Group: req.res.Group, Version: req.version}
	updated, err := s.updateObject(r.Context(), req, opts.dryRun, put == nil || put.ResourceVersion == "", func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if put != nil && put.UID != "" && put.UID != current.GetUID() {
			return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", put.UID, current.GetUID()))
		}
		managed := managedfields.NewScaleHandler(current.GetManagedFields(), gv, req.res.ReplicasPaths)
		old, found, err := scaleOf(current, sc)
		if err != nil {
			return nil, err // as kube's: the accessor's error as it is, a 500
		}
		if !found {
			old.Spec.Replicas = unsetReplicas
		}
		if old.ManagedFields, err = managed.ToSubresource(); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		oldU, err := scaleToUnstructured(old)
		if err != nil {
			return nil, err
		}
		var out runtime.Object
		switch patchType {
		case types.ApplyYAMLPatchType:
			applied, err := decodeApplyConfig(body)
			if err != nil {
				return nil, err
			}
			if out, err = fm.Apply(oldU, applied, opts.fieldManager, force); err != nil {
				if _, ok := err.(apierrors.APIStatus); ok {
					return nil, err
				}
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if err := checkApplyStrict(r.Context(), body, opts.fieldValidation); err != nil {
				return nil, err
			}
		default:
			scale := put.DeepCopy()
			if r.Method == http.MethodPatch {
				oldJSON, _ := json.Marshal(old)
				patchReq := &resourceRequest{res: &registry.Resource{GoType: func(string) interface{} { return &autoscalingv1.Scale{} }}}
				data, err := applyPatch(patchReq, patchType, oldJSON, body)
				if err != nil {
					return nil, err
				}
				if scale, err = decodeScale(r.Context(), data, opts.fieldValidation, true); err != nil {
					return nil, err
				}
			}
			newU, err := scaleToUnstructured(scale)
			if err != nil {
				return nil, err
			}
			out = fm.UpdateNoErrors(oldU, newU, opts.fieldManager)
		}
		outU, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("the Scale's field manager returned %T", out))
		}
		scale := &autoscalingv1.Scale{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(outU.Object, scale); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type Scale): %v", err))
		}
		if err := checkName(scale.Name, req.name); err != nil {
			return nil, err
		}
		if scale.Spec.Replicas == unsetReplicas {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", sc.SpecReplicasPath))
		}
		// Negative replicas reach the custom resource, whose validation
		// refuses them (as kube-apiserver's scale storage leaves it to).
		if err := unstructured.SetNestedField(current.Object, int64(scale.Spec.Replicas), replicasPath(sc.SpecReplicasPath)...); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if scale.ResourceVersion != "" {
			current.SetResourceVersion(scale.ResourceVersion)
		}
		// The mutating webhooks see these two, as kube's scale storage
		// hands them to the update's admission.
		req.scales = &scaleWrite{scale: outU.DeepCopy(), old: oldU}
		entries, err := managed.ToParent(scale.ManagedFields)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		current.SetManagedFields(entries)
		return current, nil
	})
	if err == nil {
		// The stored object, read back in the request's version.
		err = req.res.Strategy.Convert(updated, req.version)
	}
	var result *autoscalingv1.Scale
	if err == nil {
		result, _, err = scaleOf(updated, sc)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	// In the form negotiated before the write.
	out, _ := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList")
	writeScale(w, r, sc, out, result)
}

// writeScale writes a Scale read or written through /scale in the form
// negotiated, as kube-apiserver's handlers transform it: the Scale, its
// PartialObjectMetadata, or its Table with the Scale's own columns (what
// kubectl get --subresource=scale asks for); a PartialObjectMetadataList is
// kube's 406 naming the Scale's Go type (its negotiation accepts one on any
// endpoint).
func writeScale(w http.ResponseWriter, r *http.Request, sc *registry.Scale, out output, scale *autoscalingv1.Scale) {
	if out.as == "" {
		writeObject(w, r, out, http.StatusOK, scale)
		return
	}
	if out.as == "PartialObjectMetadataList" {
		writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusNotAcceptable,
			Reason:  metav1.StatusReasonNotAcceptable,
			Message: "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Scale)",
		}})
		return
	}
	u, err := scaleToUnstructured(scale)
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	if out.as == "PartialObjectMetadata" {
		writeObject(w, r, out, http.StatusOK, partialMetadata(u, out.version))
		return
	}
	table, err := tableOf(r, sc.Table, out.version, []*unstructured.Unstructured{u}, metav1.ListMeta{ResourceVersion: u.GetResourceVersion()})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, out, http.StatusOK, table)
}

// unsetReplicas stands for a custom resource without spec replicas in its
// Scale while a write runs (the smallest int32, as kube-apiserver's): a
// write that leaves it is refused.
const unsetReplicas = -2147483648

// scaleToUnstructured is scale as the field manager takes it.
func scaleToUnstructured(scale *autoscalingv1.Scale) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(scale)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetGroupVersionKind(scaleGroupKind.WithVersion("v1"))
	return out, nil
}

// admitScale runs the admission of a /scale write as kube-apiserver does:
// the mutating webhooks get the client's Scale and the current one
// (req.scales), and the replicas they leave go into obj; the validating
// webhooks, whose attributes it returns, get the Scales of obj and old.
func (s *Server) admitScale(ctx context.Context, req *resourceRequest, obj, old *unstructured.Unstructured, options runtime.Object, dryRun bool) (admission.Attributes, error) {
	sc := req.res.ScaleIn(req.version)
	gvr := schema.GroupVersionResource{Group: req.res.Group, Version: req.version, Resource: req.res.Plural}
	if req.options != nil {
		options = req.options // the client's, as kube passes them
	}
	attributes := func(scale, old *unstructured.Unstructured) admission.Attributes {
		return admission.NewAttributesRecord(scale, old, scaleGroupKind.WithVersion("v1"), req.namespace, req.name, gvr, "scale", admission.Update, options, dryRun, req.actor())
	}
	// The validating webhooks see Scales made from the custom resource
	// before and after the write, as kube's scale storage makes them.
	validating := func() (admission.Attributes, error) {
		scales := make([]*unstructured.Unstructured, 2)
		for i, cr := range []*unstructured.Unstructured{obj, old} {
			scale, _, err := scaleOf(cr, sc)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if scales[i], err = scaleToUnstructured(scale); err != nil {
				return nil, err
			}
		}
		return attributes(scales[0], scales[1]), nil
	}
	if !s.webhooks.HasMutating() || req.scales == nil {
		return validating()
	}
	mutated := req.scales.scale.DeepCopy()
	if err := s.mutate(ctx, attributes(mutated, req.scales.old.DeepCopy())); err != nil {
		return nil, err
	}
	var replicas int64
	value, _, _ := unstructured.NestedFieldNoCopy(mutated.Object, "spec", "replicas")
	switch v := value.(type) {
	case int64:
		replicas = v
	case float64:
		replicas = int64(v)
	case nil:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the Scale a mutating webhook returned has spec.replicas %v", v))
	}
	if err := unstructured.SetNestedField(obj.Object, replicas, replicasPath(sc.SpecReplicasPath)...); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return validating()
}

// scaleWrite holds the Scales of a /scale write that its mutating webhooks
// see: the client's, after its field manager (with managedFields), and
// the current one (its replicas unsetReplicas when the resource has none).
type scaleWrite struct{ scale, old *unstructured.Unstructured }

// scaleScheme knows the one kind a /scale endpoint takes, as
// kube-apiserver's scale converter's scheme.
var scaleScheme = scaleclient.NewScaleConverter().Scheme()

// scaleSchemeName is the name kube-apiserver's scale converter's scheme
// gives itself in its errors ("no kind ... is registered for version ...
// in scheme ..."), which a patch of /scale whose result names another kind
// gets: the file and line of client-go's NewScaleConverter that made it,
// as its release builds record them (a scheme kapi makes is named after
// the module cache's path instead).
const scaleSchemeName = "k8s.io/client-go/scale/util.go:146"

// customResourceTyperScheme names the scheme of the typer of
// kube-apiserver's custom resource endpoints (by where
// apiextensions-apiserver 1.33 makes it), which knows only the option kinds.
const customResourceTyperScheme = "k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go:725"

// scaleBodyUndecodable is kube-apiserver's answer to a PUT of /scale whose
// Scale does not decode, whatever the reason (malformed, of another kind,
// refused fields under Strict): its update handler words a decoding error
// after the endpoint's kind, which it asks the custom resource's typer for,
// and that typer knows no Scale: its error is the answer.
func scaleBodyUndecodable() error {
	return apierrors.NewBadRequest(runtime.NewNotRegisteredErrForType(customResourceTyperScheme, reflect.TypeOf(autoscalingv1.Scale{})).Error())
}

// decodeScale decodes a Scale sent to /scale (a PUT's body, or a patch's
// result) as kube-apiserver's scale endpoint does: an autoscaling/v1 Scale
// (what the body leaves out of its apiVersion and kind defaults to that),
// strictly as fieldValidation asks. A patch's result that does not decode
// is an invalid patch; a PUT's body, kube's typer error
// (scaleBodyUndecodable).
func decodeScale(ctx context.Context, data []byte, fieldValidation string, patched bool) (*autoscalingv1.Scale, error) {
	fail := func(err error) error {
		if patched {
			return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(data), err.Error())})
		}
		return scaleBodyUndecodable()
	}
	var tm metav1.TypeMeta
	if json.Unmarshal(data, &tm) == nil { // else the decoding below says why
		gvk := scaleGroupKind.WithVersion("v1")
		if tm.Kind != "" {
			gvk.Kind = tm.Kind
		}
		if gv, err := schema.ParseGroupVersion(tm.APIVersion); err == nil && tm.APIVersion != "" {
			gvk.Group, gvk.Version = gv.Group, gv.Version
		}
		if _, err := scaleScheme.New(gvk); err != nil {
			if runtime.IsNotRegisteredError(err) {
				err = runtime.NewNotRegisteredErrForKind(scaleSchemeName, gvk)
			}
			return nil, fail(err)
		}
	}
	out := &autoscalingv1.Scale{}
	strict, err := sigsjson.UnmarshalStrict(data, out, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fail(err)
	}
	if len(strict) > 0 {
		switch fieldValidation {
		case metav1.FieldValidationStrict:
			return nil, fail(runtime.NewStrictDecodingError(strict))
		case metav1.FieldValidationIgnore:
		default: // Warn
			for _, e := range strict {
				addWarning(ctx, e.Error())
			}
		}
	}
	return out, nil
}
