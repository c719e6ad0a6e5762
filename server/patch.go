package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// patch applies a JSON, merge or strategic merge patch. Server-side apply
// is not served yet.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	allowed := []string{string(types.JSONPatchType), string(types.MergePatchType)}
	if req.res.GoType != nil {
		allowed = append(allowed, string(types.StrategicMergePatchType))
	}
	body, mt, err := readBody(r, allowed...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var opts metav1.PatchOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, types.PatchType(mt)); len(errs) > 0 {
		writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs))
		return
	}
	// A patch that names a resourceVersion is a precondition; otherwise
	// the patch is retried on a conflict, as kube-apiserver does.
	var probe struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(body, &probe)
	retry := probe.Metadata.ResourceVersion == ""

	updated, err := s.updateObject(r.Context(), req, len(opts.DryRun) > 0, retry, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if err := req.res.Strategy.Convert(current, req.version); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		original, err := json.Marshal(current.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var patched []byte
		switch types.PatchType(mt) {
		case types.JSONPatchType:
			p, err := jsonpatch.DecodePatch(body)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if patched, err = p.Apply(original); err != nil {
				return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", req.res.GroupResource(), req.name, err.Error(), 0, false)
			}
		case types.MergePatchType:
			if patched, err = jsonpatch.MergePatch(original, body); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		case types.StrategicMergePatchType:
			if patched, err = strategicpatch.StrategicMergePatch(original, body, req.res.GoType(req.version)); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		obj, err := decodeObject(w, r, req, patched, opts.FieldValidation)
		if err != nil {
			return nil, err
		}
		if obj.GetName() != req.name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), req.name))
		}
		if err := checkNamespace(req, obj); err != nil {
			return nil, err
		}
		if obj.GetUID() != current.GetUID() {
			return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", obj.GetUID(), current.GetUID()))
		}
		if err := req.res.Strategy.Convert(obj, req.res.StorageVersion); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return obj, nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondObject(w, r, req, http.StatusOK, updated)
}
