package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kapi-dev/kapi/server/internal/handlers"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

// maxJSONPatchOperations is kube-apiserver's limit on a JSON patch.
const maxJSONPatchOperations = 10000

// patch applies a JSON patch, a merge patch, a strategic merge patch
// (built-in kinds) or a server-side apply patch.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	allowed := []string{string(types.JSONPatchType), string(types.MergePatchType)}
	if req.res.GoType != nil {
		allowed = append(allowed, string(types.StrategicMergePatchType))
	}
	if req.res.TypeConverter != nil {
		allowed = append(allowed, string(types.ApplyYAMLPatchType))
	}
	body, mt, err := readBody(r, allowed...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	patchType := types.PatchType(mt)
	opts, err := parsePatchOptions(r, patchType)
	if err != nil {
		writeError(w, r, err)
		return
	}
	dryRun := len(opts.DryRun) > 0
	req.isPatch = true
	// Admission sees a patch as an update with the patch's options, as
	// kube-apiserver passes them.
	req.options = &metav1.UpdateOptions{
		TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"},
		DryRun:   opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation,
	}
	manager := managerName(opts.FieldManager, r.UserAgent())

	if patchType == types.ApplyYAMLPatchType {
		s.apply(w, r, req, body, opts, dryRun)
		return
	}

	patchStrict, err := patchStrictErrors(patchType, body, opts.FieldValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}

	// A patch that sets a resourceVersion (a merge patch's metadata, a JSON
	// patch's replace) makes it a precondition; otherwise the patch is
	// retried on a conflict, as kube-apiserver does (updateObject).
	updated, err := s.updateObject(r.Context(), req, dryRun, true, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		live := current.DeepCopy()
		original, err := unstructuredjson.Marshal(current.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(req, patchType, original, body)
		if err != nil {
			return nil, err
		}
		obj, err := s.patchedObject(w, r, req, live, patched, opts.FieldValidation, patchStrict)
		if err != nil {
			return nil, err
		}
		return s.trackUpdate(req, live, obj, manager), nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondObject(w, r, req, http.StatusOK, updated)
}

// parsePatchOptions decodes and validates a PATCH's options for patchType.
func parsePatchOptions(r *http.Request, patchType types.PatchType) (metav1.PatchOptions, error) {
	var opts metav1.PatchOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, patchType); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return opts, nil
}

// patchStrictErrors decodes a JSON, merge or strategic merge patch strictly,
// as kube-apiserver does unless fieldValidation is Ignore: a patch that is
// not a list of operations or an object is a 400; its duplicate fields (and
// a JSON patch operation's unknown ones) join the strict errors of the
// patched object, a warning each or, with Strict, a 422.
func patchStrictErrors(patchType types.PatchType, patch []byte, fieldValidation string) ([]error, error) {
	if fieldValidation == metav1.FieldValidationIgnore {
		return nil, nil
	}
	switch patchType {
	case types.JSONPatchType:
		strict, err := handlers.StrictJSONPatchErrors(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		for i, e := range strict {
			strict[i] = fmt.Errorf("json patch %v", e)
		}
		return strict, nil
	case types.MergePatchType:
		m := map[string]interface{}{}
		strict, err := sigsjson.UnmarshalStrict(patch, &m)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		return strict, nil
	case types.StrategicMergePatchType:
		m := map[string]interface{}{}
		strict, err := sigsjson.UnmarshalStrict(patch, &m)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return strict, nil
	}
	return nil, nil
}

// applyPatch applies a JSON, merge or strategic merge patch to original,
// answering bad patches as kube-apiserver does.
func applyPatch(req *resourceRequest, patchType types.PatchType, original, patch []byte) ([]byte, error) {
	switch patchType {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		patched, err := p.Apply(original)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return patched, nil
	case types.MergePatchType:
		// A null or a scalar is no merge patch: kube-apiserver's merge
		// (json-patch v4) says so.
		if t := bytes.TrimSpace(patch); len(t) > 0 && t[0] != '{' && t[0] != '[' {
			return nil, apierrors.NewBadRequest("Invalid JSON Patch")
		}
		patched, err := jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return patched, nil
	case types.StrategicMergePatchType:
		var patchMap map[string]interface{}
		if err := utiljson.Unmarshal(patch, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err := strategicMergePatch(original, patch, req.res.GoType(req.version))
		if err != nil {
			return nil, interpretStrategicMergePatchError(err)
		}
		req.patchQuote = fmt.Sprintf("%+v", patchMap)
		var patchedMap map[string]interface{}
		if err := utiljson.Unmarshal(patched, &patchedMap); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		// kube-apiserver reads the result field by field into the kind's
		// Go type, converted by that type (applyPatchToObject), so that an
		// apiVersion or kind the patch set is not read (a merge or JSON
		// patch's result is decoded by the apiVersion and kind it names),
		// with the unstructured converter, whose error (not
		// encoding/json's) an invalid patch quotes: "cannot convert int64
		// to string".
		if setsTypeMeta(patchMap) {
			if patched, err = withTypeMetaOf(original, patchedMap); err != nil {
				return nil, err
			}
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(patchedMap, req.res.GoType(req.version)); err != nil {
			return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), req.patchQuote, err.Error())})
		}
		return patched, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported patch type %q", patchType))
}

// setsTypeMeta tells whether a strategic merge patch sets the apiVersion or
// the kind to a string.
func setsTypeMeta(patchMap map[string]interface{}) bool {
	_, apiVersion := patchMap["apiVersion"].(string)
	_, kind := patchMap["kind"].(string)
	return apiVersion || kind
}

// withTypeMetaOf sets patched's apiVersion and kind back to original's
// (patched holds them as strings, or not at all) and returns its JSON.
func withTypeMetaOf(original []byte, patched map[string]interface{}) ([]byte, error) {
	var from map[string]interface{}
	if err := utiljson.Unmarshal(original, &from); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	for _, key := range []string{"apiVersion", "kind"} {
		if _, ok := patched[key].(string); !ok {
			continue
		}
		if v, ok := from[key]; ok {
			patched[key] = v
		} else {
			delete(patched, key)
		}
	}
	out, err := unstructuredjson.Marshal(patched)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// strategicMergePatch applies patch to original with the library, which
// panics on some malformed directives (a $setElementOrder list of objects
// for a list it merges as primitives), as it does under kube-apiserver,
// which answers them 500: here they are the malformed patch (400) they are.
func strategicMergePatch(original, patch []byte, dataStruct interface{}) (patched []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			patched, err = nil, fmt.Errorf("the strategic merge patch cannot be applied: %v", v)
		}
	}()
	return strategicpatch.StrategicMergePatch(original, patch, dataStruct)
}

// interpretStrategicMergePatchError maps the strategic merge patch
// library's errors to kube-apiserver's answers.
func interpretStrategicMergePatchError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return apierrors.NewBadRequest(err.Error())
}

// patchedObject decodes a patch's result (in the request's version) as a
// write of it and checks what a patch may not change.
func (s *Server) patchedObject(w http.ResponseWriter, r *http.Request, req *resourceRequest, live *unstructured.Unstructured, patched []byte, fieldValidation string, patchStrict []error) (*unstructured.Unstructured, error) {
	obj, err := decodeObject(w, r, req, patched, fieldValidation, patchStrict...)
	if err != nil {
		return nil, err
	}
	// As kube-apiserver checks a patched object: a uid where no object
	// exists (apply's create), the namespace, the name.
	if live != nil && live.GetUID() == "" && obj.GetUID() != "" {
		return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", obj.GetUID()))
	}
	if err := checkNamespace(req, obj); err != nil {
		return nil, err
	}
	if err := checkName(obj.GetName(), req.name); err != nil {
		return nil, err
	}
	if live != nil && obj.GetUID() != "" && obj.GetUID() != live.GetUID() {
		// A patch carries no uid precondition: changing the uid is an
		// invalid update, as kube-apiserver reports it. (One that clears
		// it keeps the stored one, as kube's update fills it in: kubectl
		// apply's three-way patch clears it when the last applied
		// configuration had one.)
		return nil, apierrors.NewInvalid(req.res.GroupKind(), req.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), obj.GetUID(), "field is immutable")})
	}
	return obj, nil
}

// apply runs a server-side apply patch: the applied configuration merges
// into the live object by the schema's list types and map keys, managed
// fields say who owns what, and a change to a field another manager owns is
// a 409 conflict unless force is set. An apply to a missing object creates
// it.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, req *resourceRequest, body []byte, opts metav1.PatchOptions, dryRun bool) {
	applied, err := decodeApplyConfig(body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	force := opts.Force != nil && *opts.Force
	req.serverSideApply = true
	fm, err := s.fieldManagers.get(req.res, req.version, req.subresource)
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	merge := func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		out, err := fm.Apply(live, applied.DeepCopy(), opts.FieldManager, force)
		if err != nil {
			if _, ok := err.(apierrors.APIStatus); ok {
				return nil, err
			}
			// A configuration that does not fit the kind's schema.
			return nil, apierrors.NewBadRequest(err.Error())
		}
		merged, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("apply returned %T", out))
		}
		if err := checkApplyStrict(r.Context(), body, opts.FieldValidation); err != nil {
			return nil, err
		}
		data, err := unstructuredjson.Marshal(merged.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		req.applied = true
		defer func() { req.applied = false }()
		return s.patchedObject(w, r, req, live, data, opts.FieldValidation, nil)
	}

	patchOptions := req.options
	updated, err := s.updateObject(r.Context(), req, dryRun, true, merge)
	// An apply that finds no object creates it; one that loses the race
	// to create it to another writer updates it instead, as kube's store
	// retries its create-on-update (no AlreadyExists for an apply).
	for attempt := 0; apierrors.IsNotFound(err) && req.subresource == ""; attempt++ {
		// Create on apply, from a new object of the kind, as
		// kube-apiserver: the configuration must name the object.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(schema.GroupVersionKind{Group: req.res.Group, Version: req.version, Kind: req.res.Kind})
		obj, cerr := merge(live)
		if cerr == nil {
			req.options = &metav1.CreateOptions{
				TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"},
				DryRun:   opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation,
			}
			obj, cerr = s.createObject(r.Context(), req, obj, dryRun, "")
		}
		if apierrors.IsAlreadyExists(cerr) && attempt < 16 && r.Context().Err() == nil {
			req.options = patchOptions
			updated, err = s.updateObject(r.Context(), req, dryRun, true, merge)
			continue
		}
		if cerr != nil {
			writeError(w, r, cerr)
			return
		}
		s.respondObject(w, r, req, http.StatusCreated, obj)
		return
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondObject(w, r, req, http.StatusOK, updated)
}

// decodeApplyConfig reads a server-side apply configuration as
// kube-apiserver does: as YAML (JSON being YAML), its errors worded as
// sigs.k8s.io/yaml words them. An empty or null one is an object of no
// kind, which the field manager refuses.
func decodeApplyConfig(body []byte) (*unstructured.Unstructured, error) {
	var config map[string]interface{}
	if err := yaml.Unmarshal(body, &config); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if config == nil {
		return applied, nil
	}
	// Decoded again from its JSON, for integers as int64 (as every other
	// body is decoded).
	js, err := yaml.YAMLToJSON(body)
	if err == nil {
		err = utiljson.Unmarshal(js, &applied.Object)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	return applied, nil
}

// checkApplyStrict reads an applied configuration strictly, as
// kube-apiserver does once it has applied it: its duplicate keys are a 400
// under fieldValidation=Strict, a warning each under Warn (the default).
func checkApplyStrict(ctx context.Context, body []byte, fieldValidation string) error {
	if fieldValidation == metav1.FieldValidationIgnore {
		return nil
	}
	err := yaml.UnmarshalStrict(body, &map[string]interface{}{})
	if err == nil {
		return nil
	}
	if fieldValidation == metav1.FieldValidationStrict {
		return apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
	}
	for _, text := range strictWarnings(err) {
		addWarning(ctx, text)
	}
	return nil
}
