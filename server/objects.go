package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
	"github.com/kapi-dev/kapi/storage"
)

// readBody reads a request body up to kube-apiserver's limit and returns it
// as JSON, converting YAML (a server-side apply configuration is returned
// as sent: see decodeApplyConfig). allowed lists the accepted media types.
func readBody(r *http.Request, allowed ...string) ([]byte, string, error) {
	data, mt, _, _, err := readObjectBody(r, nil, allowed...)
	if ye := (*yamlBodyError)(nil); errors.As(err, &ye) {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(allowed, ", ")))
	}
	if pe := (*protobufBodyError)(nil); errors.As(err, &pe) {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as protobuf: %v", pe.err))
	}
	return data, mt, err
}

// protobufBodyError is a protobuf body that does not decode: the error,
// and the kind its envelope named (nil when the envelope did not parse).
type protobufBodyError struct {
	body []byte
	gvk  *schema.GroupVersionKind
	err  error
}

func (e *protobufBodyError) Error() string { return e.err.Error() }

// status is the error as kube-apiserver's create and update handlers word
// a body their decoder refused (transformDecodeError), kind being the
// endpoint's. A kind the envelope names that is not registered is named
// as not registered in schemeName, the scheme kube decodes the endpoint's
// kind with (kapi's protobuf scheme is its own).
func (e *protobufBodyError) status(kind, schemeName string) error {
	err := e.err
	if e.gvk != nil && schemeName != "" && runtime.IsNotRegisteredError(err) {
		err = runtime.NewNotRegisteredErrForKind(schemeName, *e.gvk)
	}
	if e.gvk != nil && e.gvk.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", e.gvk.Kind, e.gvk.Version, kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarizeData(e.body)))
}

// schemeName is the name of the scheme kube-apiserver decodes res's
// bodies with, as its errors give it; "" when kapi does not know it.
func schemeName(res *registry.Resource) string {
	if as, ok := res.Strategy.(registry.AdmissionScheme); ok {
		_, name := as.AdmissionScheme()
		return name
	}
	return ""
}

// summarizeData is kube-apiserver's summary of a body it could not
// decode: its first 30 bytes, as text when it starts as a JSON object,
// else in hex.
func summarizeData(data []byte) string {
	const maxLength = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	case len(data) > maxLength:
		return hex.EncodeToString(data[:maxLength]) + " ..."
	}
	return hex.EncodeToString(data)
}

// yamlBodyError is a YAML body that does not parse: decodeObject words it
// as kube-apiserver's decoder does, naming the kind it expected.
type yamlBodyError struct {
	body []byte
	err  error
}

func (e *yamlBodyError) Error() string { return e.err.Error() }

// readObjectBody is readBody for an object's body: a YAML one is also read
// strictly, as kube-apiserver's strict YAML decoder reads it, and its
// duplicate keys come back as a strict error (kube lists it first). A
// protobuf envelope without a kind or version takes defaultGVK's, as kube's
// decoder defaults it to the endpoint's kind. sent is the body as the
// client sent it (YAML or protobuf, before its conversion to JSON).
func readObjectBody(r *http.Request, defaultGVK *schema.GroupVersionKind, allowed ...string) (body []byte, mediaType string, strict []error, sent []byte, err error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, "", nil, nil, unsupportedMediaType(allowed)
		}
	}
	ok := false
	for _, a := range allowed {
		if a == mt {
			ok = true
		}
	}
	if !ok {
		return nil, "", nil, nil, unsupportedMediaType(allowed)
	}
	data, err := readAtMost(r.Body, r.ContentLength, maxBodyBytes+1)
	if err != nil {
		return nil, "", nil, nil, apierrors.NewBadRequest(fmt.Sprintf("unable to read request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, "", nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	sent = data
	if mt == protobufMediaType {
		if defaultGVK != nil && !protobufCodecs().scheme.Recognizes(*defaultGVK) {
			// A custom resource: kube's decoder reads the envelope, then
			// fails to decode into the unstructured object it is handed,
			// whose kind is not set yet (its typer's error).
			_, gvk, err := protobufCodecs().codec.Decode(data, defaultGVK, &runtime.Unknown{})
			if err == nil {
				err = runtime.NewMissingKindErr("object has no kind field ")
			}
			return nil, "", nil, nil, &protobufBodyError{body: data, gvk: gvk, err: err}
		}
		obj, gvk, err := protobufCodecs().codec.Decode(data, defaultGVK, nil)
		if err != nil {
			return nil, "", nil, nil, &protobufBodyError{body: data, gvk: gvk, err: err}
		}
		if data, err = json.Marshal(obj); err != nil {
			// A RawExtension (a DeviceClass's opaque parameters) that
			// is not JSON: bad input, though not refused as kube-apiserver
			// refuses it (422 from validation, which kapi runs on JSON).
			return nil, "", nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: a field holds data that is not JSON: %v", err))
		}
	}
	if mt == "application/yaml" {
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, "", nil, nil, &yamlBodyError{body: data, err: err}
		}
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			strict = append(strict, err)
		}
		data = js
	}
	return data, mt, strict, sent, nil
}

// bodyTypes are the media types a create or update of res accepts: those
// of its serializer in kube-apiserver, which has protobuf for custom
// resources too (a protobuf custom resource then fails to decode).
func bodyTypes(*registry.Resource) []string {
	return []string{"application/json", "application/yaml", protobufMediaType}
}

// unsupportedMediaType is kube-apiserver's 415 (negotiation's error): the
// accepted media types, no details.
func unsupportedMediaType(allowed []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(allowed, ", ")),
	}}
}

// interpretTypeMeta reads body's apiVersion and kind as kube-apiserver's
// JSON serializer does before decoding anything else (its meta factory's
// Interpret): malformed JSON, a body that is not an object, or an
// apiVersion or kind that is not a string fails it, and so does an
// apiVersion that is no group version (two slashes or more).
func interpretTypeMeta(body []byte) (schema.GroupVersionKind, error) {
	var typeMeta struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	var err error
	if !json.Valid(body) {
		var syntax json.RawMessage
		err = json.Unmarshal(body, &syntax)
	} else {
		// A body that is not an object (an array, a string, a number)
		// fails as it fails kube's: into this struct.
		err = json.Unmarshal(body, &typeMeta)
	}
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
	}
	gv, err := schema.ParseGroupVersion(typeMeta.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(typeMeta.Kind), nil
}

// builtinKindError is the error kube-apiserver's decoder fails a built-in
// kind's body with when the body names another kind or version (gvk, with
// what it leaves out taken from the endpoint): a kind the kind's scheme
// does not know in that version is not registered; another kind it knows
// decodes but has no conversion into the endpoint kind's internal type.
// nil for the endpoint's kind in any version the scheme knows (which
// kube's create and update then refuse for its version).
func builtinKindError(res *registry.Resource, gvk schema.GroupVersionKind) error {
	as, ok := res.Strategy.(registry.AdmissionScheme)
	if !ok {
		return nil
	}
	scheme, name := as.AdmissionScheme()
	if !scheme.Recognizes(gvk) {
		return runtime.NewNotRegisteredErrForKind(name, gvk)
	}
	if gvk.GroupKind() == res.GroupKind() {
		return nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return err
	}
	return fmt.Errorf("converting (%s) to (%s.%s): unknown conversion", reflect.TypeOf(obj).Elem(), internalPackage(res.Group), res.Kind)
}

// withEndpointDefaults fills in what gvk leaves out from the endpoint's
// kind, as kube's JSON serializer fills in a body's from the handler's.
func withEndpointDefaults(gvk schema.GroupVersionKind, endpoint schema.GroupVersionKind) schema.GroupVersionKind {
	if gvk.Kind == "" {
		gvk.Kind = endpoint.Kind
	}
	if gvk.Version == "" && gvk.Group == "" {
		gvk.Group, gvk.Version = endpoint.Group, endpoint.Version
	}
	if gvk.Version == "" && gvk.Group == endpoint.Group {
		gvk.Version = endpoint.Version
	}
	return gvk
}

// plainTypeMeta tells whether interpretTypeMeta accepts the body that decoded
// into obj without an error and without strict errors (so with no key
// given twice): its apiVersion and kind are strings or null, and no other
// top-level key stands for them (encoding/json matches field names
// case-insensitively).
func plainTypeMeta(obj map[string]any) bool {
	for k, v := range obj {
		if !strings.EqualFold(k, "apiVersion") && !strings.EqualFold(k, "kind") {
			continue
		}
		if k != "apiVersion" && k != "kind" {
			return false
		}
		if _, ok := v.(string); !ok && v != nil {
			return false
		}
	}
	return true
}

// decodeObject decodes a write's body for req, applying fieldValidation,
// and checks the body's apiVersion and kind against the endpoint. leading
// are strict errors found before (a patch's own, a YAML body's duplicate
// keys), reported first, as kube-apiserver reports them.
func decodeObject(w http.ResponseWriter, r *http.Request, req *resourceRequest, body []byte, fieldValidation string, leading ...error) (*unstructured.Unstructured, error) {
	decode := req.res.Strategy.Decode
	if ad, ok := req.res.Strategy.(registry.AppliedDecodeStrategy); ok && req.applied {
		decode = ad.DecodeApplied
	}
	obj, strictErrs, err := decode(req.version, body)
	// kube-apiserver reports a patch whose result does not decode (or
	// not strictly) as an invalid patch.
	patchQuote := func() string {
		if req.patchQuote != "" {
			return req.patchQuote
		}
		return string(body)
	}
	// kube-apiserver reads a body's apiVersion and kind before anything
	// else: JSON whose apiVersion or kind is not a string, or whose
	// apiVersion is no group version, is unrecognized. A body the kind
	// decoded cleanly is valid JSON, and its apiVersion and kind are known
	// from the object: the JSON needs reading only otherwise.
	var gvk schema.GroupVersionKind
	var tmErr error
	if err != nil || len(strictErrs) > 0 || !plainTypeMeta(obj.Object) {
		gvk, tmErr = interpretTypeMeta(body)
	} else {
		var gv schema.GroupVersion
		gv, tmErr = schema.ParseGroupVersion(obj.GetAPIVersion())
		gvk = gv.WithKind(obj.GetKind())
	}
	if tmErr != nil && req.isPatch {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), patchQuote(), tmErr.Error())})
	}
	if tmErr != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", req.res.Kind, tmErr, summarizeData(req.quoted(body))))
	}
	// A built-in kind's body is decoded into the Go type its apiVersion
	// and kind name in the kind's scheme, before its fields are read.
	if !req.res.Custom {
		gvk = withEndpointDefaults(gvk, req.res.GroupKind().WithVersion(req.version))
		if kerr := builtinKindError(req.res, gvk); kerr != nil {
			if req.isPatch {
				return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), patchQuote(), kerr.Error())})
			}
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, req.res.Kind, kerr))
		}
	}
	if err != nil && req.isPatch {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), patchQuote(), err.Error())})
	}
	if err != nil {
		return nil, undecodable(req, body, err)
	}
	gv := schema.GroupVersion{Group: req.res.Group, Version: req.version}.String()
	switch {
	case req.res.Custom && obj.GetKind() == "" && req.isPatch:
		// A patch that removed the kind: an invalid patch.
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), patchQuote(), fmt.Sprintf("Object 'Kind' is missing in '%s'", body))})
	case req.res.Custom && obj.GetKind() == "":
		// kube-apiserver decodes a custom resource as unstructured,
		// which needs its kind.
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): Object 'Kind' is missing in '%s' (%s)", req.res.Kind, body, summarizeData(req.quoted(body))))
	case !req.res.Custom:
		// A built-in kind's decoder fills in what the body leaves out.
		if obj.GetAPIVersion() == "" {
			obj.SetAPIVersion(gv)
		}
		if obj.GetKind() == "" {
			obj.SetKind(req.res.Kind)
		}
	}
	// A custom resource's patch whose result names another apiVersion
	// decodes (as unstructured): kube's create and update check the
	// body's group version against the endpoint's, its patch does not,
	// and the kind's validation of its type meta refuses it (422, under
	// the group and kind the object names).
	if obj.GetAPIVersion() != gv && req.res.Custom && req.isPatch {
		var errs field.ErrorList
		if obj.GetKind() != req.res.Kind {
			errs = append(errs, field.Invalid(field.NewPath("kind"), obj.GetKind(), fmt.Sprintf("must be %v", req.res.Kind)))
		}
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), obj.GetAPIVersion(), fmt.Sprintf("must be %v", gv)))
		return nil, apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), errs)
	}
	if obj.GetAPIVersion() != gv {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", obj.GetAPIVersion(), gv))
	}
	// A custom resource of another kind is left to the kind's validation,
	// which refuses it (422), as kube-apiserver's.
	if obj.GetKind() != req.res.Kind && !req.res.Custom {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): kind %q does not match the kind of the endpoint", req.res.Kind, obj.GetKind()))
	}
	strictErrs = append(slices.Clip(leading), strictErrs...)
	if len(strictErrs) > 0 {
		switch fieldValidation {
		case metav1.FieldValidationStrict:
			msgs := make([]string, len(strictErrs))
			for i, e := range strictErrs {
				msgs[i] = e.Error()
			}
			if req.isPatch {
				return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), patchQuote(), "strict decoding error: "+strings.Join(msgs, ", "))})
			}
			// As kube-apiserver words a body it cannot decode as its kind.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s", obj.GetKind(), req.version, req.res.Kind, strings.Join(msgs, ", ")))
		case metav1.FieldValidationIgnore:
		default:
			for _, e := range strictErrs {
				for _, text := range strictWarnings(e) {
					addWarning(r.Context(), text)
				}
			}
		}
	}
	req.decodedFrom = body
	return obj, nil
}

// undecodable words a body that does not decode as the endpoint's kind as
// kube-apiserver does: when the body names (or, for a built-in kind, may
// leave out) its apiVersion and kind, "<Kind> in version <v> cannot be
// handled as a <Kind>"; else the object is unrecognized.
func undecodable(req *resourceRequest, body []byte, err error) error {
	var tm metav1.TypeMeta
	if json.Unmarshal(body, &tm) != nil || (tm.Kind == "" && req.res.Custom) {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", req.res.Kind, err, summarizeData(req.quoted(body))))
	}
	kind, version := tm.Kind, req.version
	if kind == "" {
		kind = req.res.Kind
	}
	if gv, perr := schema.ParseGroupVersion(tm.APIVersion); perr == nil && gv.Version != "" {
		version = gv.Version
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", kind, version, req.res.Kind, err))
}

// quoted is what kube-apiserver summarizes of a body it could not decode:
// the body as the client sent it (YAML, protobuf) when kapi converted it
// to body, else body.
func (req *resourceRequest) quoted(body []byte) []byte {
	if req.sent != nil {
		return req.sent
	}
	return body
}

// readAtMost reads body up to limit bytes into a buffer sized by the
// request's Content-Length when it gives one (io.ReadAll would grow its
// buffer from 512 bytes, allocating twice the body in all).
func readAtMost(body io.Reader, contentLength, limit int64) ([]byte, error) {
	body = io.LimitReader(body, limit)
	if contentLength <= 0 || contentLength >= limit {
		return io.ReadAll(body)
	}
	buf := make([]byte, contentLength)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err // shorter than announced
	}
	rest, err := io.ReadAll(body) // nothing, unless longer than announced
	if len(rest) > 0 {
		buf = append(buf, rest...)
	}
	return buf, err
}

// decodeStored turns stored JSON back into an object.
func decodeStored(o *storage.Object) (*unstructured.Unstructured, error) {
	// Integers as int64, as unstructured accessors expect (utiljson's).
	m, err := unstructuredjson.Unmarshal(o.Data)
	if err != nil {
		return nil, fmt.Errorf("stored object %s/%s/%s is corrupt: %w", o.Resource, o.Namespace, o.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// encoder renders obj for the store with its resourceVersion set to the
// revision the store assigns.
func encoder(res *registry.Resource, obj *unstructured.Unstructured) storage.Encoder {
	return func(rev int64) ([]byte, error) {
		obj.SetResourceVersion(strconv.FormatInt(rev, 10))
		data, err := unstructuredjson.Marshal(obj.Object)
		if err == nil && len(data) > maxObjectBytes {
			size := len(data)
			if res.StoredSize != nil {
				size = res.StoredSize(obj) // the form kube-apiserver stores
			}
			if size > maxObjectBytes {
				return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the object is %d bytes; a stored object may be at most %d", size, maxObjectBytes))
			}
		}
		return data, err
	}
}

// maxObjectBytes is the largest object kapi stores: etcd's request limit
// under kube-apiserver (1.5 MiB). (A variable for tests.)
var maxObjectBytes = 3 * 1024 * 1024 / 2

// storeShedding runs a write of obj, and once more without its
// managedFields when obj was too large to store, as kube-apiserver does:
// they can be large, and are safe to drop. A server-side apply's write is
// made once: kube-apiserver's patch handler does not retry an apply (its
// managedFields are what the apply is about).
func storeShedding(req *resourceRequest, obj *unstructured.Unstructured, write func() error) error {
	err := write()
	if apierrors.IsRequestEntityTooLargeError(err) && len(obj.GetManagedFields()) > 0 && !req.serverSideApply {
		obj.SetManagedFields(nil)
		err = write()
	}
	return err
}

func storageKey(res *registry.Resource, namespace, name string) storage.Key {
	return storage.Key{Resource: res.StorageResource(), Namespace: namespace, Name: name}
}

// storageError maps a storage error to kube-apiserver's status error.
func storageError(err error, res *registry.Resource, name string) error {
	gr := res.GroupResource()
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(registryConflictMessage))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, storage.ErrClosed):
		return apierrors.NewServiceUnavailable("the server is shutting down")
	case errors.Is(err, storage.ErrNoSpace):
		return apierrors.NewServiceUnavailable("the storage is full: writes are refused until there is space again, reads go on (" + err.Error() + ")")
	case errors.Is(err, storage.ErrReadOnly):
		return apierrors.NewServiceUnavailable("the storage is read-only: writes are refused, reads go on (" + err.Error() + ")")
	case errors.Is(err, storage.ErrIO):
		return apierrors.NewServiceUnavailable("the storage failed: " + err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
	}
	if se, ok := err.(apierrors.APIStatus); ok {
		return se.(error)
	}
	return apierrors.NewInternalError(err)
}

const registryConflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// respondObject writes one object, converted to the request's version, in
// the negotiated form.
func (s *Server) respondObject(w http.ResponseWriter, r *http.Request, req *resourceRequest, code int, obj *unstructured.Unstructured) {
	out, err := negotiateObject(r, req)
	s.respondNegotiated(w, r, req, code, obj, out, err)
}

// negotiateObject negotiates the form of an answer that is one object of
// req's resource.
func negotiateObject(r *http.Request, req *resourceRequest) (output, error) {
	return negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList")
}

// respondNegotiated is respondObject in the form out that negotiateObject
// gave (with its error err).
func (s *Server) respondNegotiated(w http.ResponseWriter, r *http.Request, req *resourceRequest, code int, obj *unstructured.Unstructured, out output, err error) {
	if err == nil && out.as == "PartialObjectMetadataList" {
		err = notPartialMetadataShape(req.res, false)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := req.res.Strategy.Convert(obj, req.version); err != nil {
		writeError(w, r, err)
		return
	}
	switch out.as {
	case "Table":
		// A single object's Table carries its resourceVersion, as kube's
		// table convertors set it.
		table, err := s.table(r, req, out.version, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, out, code, table)
	case "PartialObjectMetadata":
		writeObject(w, r, out, code, partialMetadata(obj, out.version))
	default:
		writeObject(w, r, out, code, obj.Object)
	}
}

func partialMetadata(obj *unstructured.Unstructured, version string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}}
	meta, _, _ := unstructured.NestedMap(obj.Object, "metadata")
	data, _ := json.Marshal(meta)
	_ = json.Unmarshal(data, &m.ObjectMeta)
	return m
}

// strictWarnings are the warnings a strict decoding error gives under
// fieldValidation=Warn, as kube-apiserver splits a YAML decoder's error
// into one warning per line.
func strictWarnings(err error) []string {
	msg := err.Error()
	for _, prefix := range []string{"yaml: unmarshal errors:\n", "error converting YAML to JSON: yaml: unmarshal errors:\n"} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			lines := strings.Split(rest, "\n")
			for i, line := range lines {
				lines[i] = strings.TrimSpace(line)
			}
			return lines
		}
	}
	return []string{msg}
}

// gvk is the kind of the request's endpoint, in the requested version:
// what kube-apiserver's decoder defaults a body's missing kind and version
// to (its scope.Kind).
func (req *resourceRequest) gvk() *schema.GroupVersionKind {
	return &schema.GroupVersionKind{Group: req.res.Group, Version: req.version, Kind: req.res.Kind}
}
