package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/util/apihelpers"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
	"github.com/kapi-dev/kapi/storage"
)

// tooLargeRVWait is how long a read for a resourceVersion newer than the
// store waits for it before answering 504, as kube-apiserver does.
const tooLargeRVWait = 3 * time.Second

func (s *Server) get(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	// As kube-apiserver's get handler: the response's form is negotiated
	// first, so a client accepting none the resource has (protobuf alone,
	// for a custom resource) gets its 406 before any other error.
	out, err := negotiateObject(r, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := s.getRequested(r, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondNegotiated(w, r, req, http.StatusOK, obj, out, nil)
}

// getRequested reads the object a get names (of the object, its status or
// its scale) as kube-apiserver's get does: its query (GetOptions, export
// refused), its name (as kube's key function checks it, before the
// storage reads the resourceVersion), its resourceVersion (a newer one
// waited for), then the object, in the storage version.
func (s *Server) getRequested(r *http.Request, req *resourceRequest) (*unstructured.Unstructured, error) {
	opts, err := decodeGetOptions(r)
	if err != nil {
		return nil, err
	}
	if err := checkPathName(req.name); err != nil {
		return nil, err
	}
	if err := s.awaitGetResourceVersion(r.Context(), opts.ResourceVersion); err != nil {
		return nil, err
	}
	obj, _, err := s.getObject(r.Context(), req.res, req.namespace, req.name)
	return obj, err
}

// getObject reads the current state of an object in the storage version.
func (s *Server) getObject(ctx context.Context, res *registry.Resource, namespace, name string) (*unstructured.Unstructured, int64, error) {
	o, err := s.store.Get(ctx, storageKey(res, namespace, name))
	if err != nil {
		return nil, 0, storageError(err, res, name)
	}
	u, err := decodeStored(o)
	if err != nil {
		return nil, 0, apierrors.NewInternalError(err)
	}
	return u, o.Rev, nil
}

// decodeGetOptions reads a get's query as kube-apiserver's get handler
// reads it: an export parameter that is not false is refused (export was
// removed in 1.18), then the GetOptions are decoded.
func decodeGetOptions(r *http.Request) (metav1.GetOptions, error) {
	var opts metav1.GetOptions
	q := r.URL.Query()
	if export := q["export"]; len(export) > 0 {
		exporting := true
		if err := runtime.Convert_Slice_string_To_bool(&export, &exporting, nil); err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("the export parameter cannot be parsed: %v", err))
		}
		if exporting {
			return opts, apierrors.NewBadRequest("the export parameter, deprecated since v1.14, is no longer supported")
		}
	}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

// awaitGetResourceVersion reads a get's resourceVersion as
// kube-apiserver's watch cache reads it (it serves every get that names
// one): a malformed one is the cache's parser's error, in its words, and a
// newer one than the store's is waited for. (kube answers the parser's
// error as no Status, a 500 with no reason; bad input is a 400 here.)
func (s *Server) awaitGetResourceVersion(ctx context.Context, rv string) error {
	if _, err := parseResourceVersion(rv); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return s.waitForRV(ctx, rv)
}

// waitForRV waits until the store has reached the resourceVersion rv
// ("" and "0" need nothing); kube-apiserver answers 504 after a while.
func (s *Server) waitForRV(ctx context.Context, rv string) error {
	n, err := parseResourceVersion(rv)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	if n == 0 {
		return nil
	}
	deadline := time.Now().Add(tooLargeRVWait)
	for s.store.CurrentRev() < n {
		if time.Now().After(deadline) {
			return tooLargeResourceVersion(n, s.store.CurrentRev())
		}
		select {
		case <-ctx.Done():
			return apierrors.NewTimeoutError("request canceled", 1)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// errFutureRevision is kube-apiserver's answer to a list of an exact
// revision (resourceVersionMatch=Exact, a page of a resourceVersion, a
// continue token) past the newest: etcd's error as it is, a 500 without a
// reason. (A read not older than such a revision waits, then 504s.)
var errFutureRevision = errors.New("etcdserver: mvcc: required revision is a future revision")

// parseResourceVersion reads a resourceVersion parameter as
// kube-apiserver's storage reads it ("" and "0" are 0), with its error.
func parseResourceVersion(rv string) (int64, error) {
	n, err := apistorage.APIObjectVersioner{}.ParseResourceVersion(rv)
	return int64(n), err
}

// continueToken is the opaque continue value of a paginated list.
type continueToken struct {
	APIVersion string `json:"v"`
	// Rev is the snapshot revision of the list; -1 continues inconsistently
	// at the current state (offered after a 410).
	Rev       int64  `json:"rv"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"start"`
}

func encodeContinue(t continueToken) string {
	t.APIVersion = "meta.k8s.io/v1"
	data, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeContinue reads a continue token; one kube-apiserver's storage
// would refuse is refused with its words.
func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	if _, _, err := apistorage.DecodeContinue(s, "/"); err != nil {
		return t, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	data, _ := base64.RawURLEncoding.DecodeString(s)
	if err := json.Unmarshal(data, &t); err != nil {
		return t, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return t, nil
}

// parseListOptions decodes and validates the list parameters.
func parseListOptions(r *http.Request, watch bool) (*metainternalversion.ListOptions, error) {
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	opts.Watch = opts.Watch || watch
	// A watch-list (sendInitialEvents) is served as kube-apiserver serves it
	// with its WatchList feature on, when a client asks for one; a watch
	// from "" or "0" that does not ask starts as kube-apiserver 1.33's
	// (the feature off by default): its initial events, no closing
	// bookmark (kube's defaulting with the feature on would make it a
	// watch-list).
	if errs := metainternalversionvalidation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

// selection is a list's label and field selectors for one resource, read
// through version ("": the storage version).
type selection struct {
	res     *registry.Resource
	version string
	labels  labels.Selector
	fields  fields.Selector
	// served: the selection reads a custom resource's selectable
	// fields, which it reads from the object as served in version.
	served bool
}

func newSelection(res *registry.Resource, version string, opts *metainternalversion.ListOptions) (*selection, error) {
	sel := &selection{res: res, version: version, labels: opts.LabelSelector, fields: opts.FieldSelector}
	if sel.labels == nil {
		sel.labels = labels.Everything()
	}
	if sel.fields == nil {
		sel.fields = fields.Everything()
	}
	// Every field a selector names must be one the kind supports.
	probe := sel.fieldSet(&unstructured.Unstructured{Object: map[string]interface{}{}})
	for _, req := range sel.fields.Requirements() {
		if res.Custom && version != "" && req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			sel.served = true
		}
		if _, ok := probe[req.Field]; !ok && res.OwnFieldLabelErrors {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
		if _, ok := probe[req.Field]; !ok {
			known := make([]string, 0, len(probe))
			for k := range probe {
				known = append(known, strconv.Quote(k))
			}
			sort.Strings(known)
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %s", req.Field, strings.Join(known, ", ")))
		}
	}
	return sel, nil
}

func (sel *selection) fieldSet(obj *unstructured.Unstructured) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName()}
	// Cluster-scoped built-in objects have an empty metadata.namespace,
	// which a selector may name; namespaces themselves do not offer it, nor
	// do cluster-scoped custom resources (kube's custom resource converter
	// refuses the label).
	if sel.res.Namespaced || (!sel.res.Custom && (sel.res.Kind != "Namespace" || sel.res.Group != "")) {
		set["metadata.namespace"] = obj.GetNamespace()
	}
	if sel.res.FieldLabels != nil {
		for k, v := range sel.res.FieldLabels(sel.version, obj) {
			set[k] = v
		}
	}
	return set
}

func (sel *selection) empty() bool { return sel.labels.Empty() && sel.fields.Empty() }

// matches tells whether obj, as stored, is in the selection. A custom
// resource's selectable fields are read from the object as it is served in
// the request's version (defaulted, converted), as kube-apiserver's
// storage of that version filters it; a failed conversion fails the read.
func (sel *selection) matches(obj *unstructured.Unstructured) (bool, error) {
	if sel.served {
		obj = obj.DeepCopy()
		if err := sel.res.Strategy.Convert(obj, sel.version); err != nil {
			return false, err
		}
	}
	return sel.labels.Matches(labels.Set(obj.GetLabels())) && sel.fields.Matches(sel.fieldSet(obj)), nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	// As kube-apiserver's list handler: the options are read and
	// validated before the response's form is negotiated.
	opts, err := parseListOptions(r, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadataList", "PartialObjectMetadata")
	if err == nil && out.as == "PartialObjectMetadata" {
		err = notPartialMetadataShape(req.res, true)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, listMeta, err := s.listObjects(r.Context(), req.res, req.version, req.namespace, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := convertAll(req.res.Strategy, items, req.version); err != nil {
		writeError(w, r, err)
		return
	}
	if out.as != "" {
		s.writeListAs(w, r, req, out, items, listMeta)
		return
	}
	bareListItems(req.res, items)
	list, err := encodeList(schema.GroupVersion{Group: req.res.Group, Version: req.version}.String(), req.res.ListKind, listMeta, items)
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	writeObject(w, r, out, http.StatusOK, list)
}

// writeListAs writes a list (items in the requested version) in the
// transformed form negotiated, as kube-apiserver's transformResponseObject
// does with a list a read or a deletecollection gives: a Table, a
// PartialObjectMetadataList, or for a PartialObjectMetadata its 406.
func (s *Server) writeListAs(w http.ResponseWriter, r *http.Request, req *resourceRequest, out output, items []*unstructured.Unstructured, listMeta metav1.ListMeta) {
	switch out.as {
	case "Table":
		table, err := s.table(r, req, out.version, items, listMeta)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, out, http.StatusOK, table)
	case "PartialObjectMetadataList":
		// Built by appending, as kube-apiserver's: an empty one's items are
		// null.
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + out.version}, ListMeta: listMeta}
		for _, obj := range items {
			list.Items = append(list.Items, *partialMetadata(obj, out.version))
		}
		writeObject(w, r, out, http.StatusOK, list)
	default:
		writeError(w, r, notPartialMetadataShape(req.res, true))
	}
}

// bareListItems drops the apiVersion and kind of a built-in kind's list
// items, as kube-apiserver encodes its typed lists (their items carry
// none; clients fill them in from the list's). Custom resources' items
// keep theirs.
func bareListItems(res *registry.Resource, items []*unstructured.Unstructured) {
	if res.Custom {
		return
	}
	for _, obj := range items {
		delete(obj.Object, "apiVersion")
		delete(obj.Object, "kind")
	}
}

// convertAll converts objs to version in place: the versions together
// when the kind prefers that (a custom resource's conversion webhook),
// then each object on every core.
func convertAll(strategy registry.Strategy, objs []*unstructured.Unstructured, version string) error {
	var converted []bool
	if lc, ok := strategy.(registry.ListConverter); ok {
		var err error
		if converted, err = lc.ConvertVersions(objs, version); err != nil {
			return err
		}
	}
	return onEveryCore(len(objs), func(i int) error {
		if converted != nil && converted[i] {
			return nil
		}
		return strategy.Convert(objs[i], version)
	})
}

// listObjects runs a list with kube-apiserver's resourceVersion, limit and
// continue semantics. Objects are in the storage version.
func (s *Server) listObjects(ctx context.Context, res *registry.Resource, version, namespace string, opts *metainternalversion.ListOptions) ([]*unstructured.Unstructured, metav1.ListMeta, error) {
	sel, err := newSelection(res, version, opts)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	so := storage.ListOptions{Namespace: namespace, Limit: opts.Limit}
	if opts.Continue != "" {
		tok, err := decodeContinue(opts.Continue)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, metav1.ListMeta{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if tok.Rev > s.store.CurrentRev() {
			return nil, metav1.ListMeta{}, errFutureRevision
		}
		if tok.Rev > 0 {
			so.Rev = tok.Rev
		}
		so.AfterNamespace, so.AfterName = tok.Namespace, tok.Name
	} else {
		switch {
		case opts.ResourceVersion == "":
		case opts.ResourceVersion == "0":
			// Any state will do: kube-apiserver serves it from its watch
			// cache, whole (the limit is ignored).
			so.Limit = 0
		case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact,
			opts.ResourceVersionMatch == "" && opts.Limit > 0:
			// A page of a resourceVersion without a match is the legacy
			// Exact, as kube-apiserver reads it.
			n, err := parseResourceVersion(opts.ResourceVersion)
			if err != nil {
				return nil, metav1.ListMeta{}, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
			}
			// kube-apiserver reads an exact revision from etcd, which has
			// none past its own: an error at once, not a wait.
			if n > s.store.CurrentRev() {
				return nil, metav1.ListMeta{}, errFutureRevision
			}
			so.Rev = n
		default: // NotOlderThan, or the legacy unset match
			if err := s.waitForRV(ctx, opts.ResourceVersion); err != nil {
				return nil, metav1.ListMeta{}, err
			}
		}
	}
	// A selection's failed conversion (a conversion webhook's) is the
	// list's answer as it is, as a read through the version fails.
	var selErr error
	if !sel.empty() {
		so.Predicate = func(o *storage.Object) (bool, error) {
			u, err := decodeStored(o)
			if err != nil {
				return false, err
			}
			in, err := sel.matches(u)
			selErr = err
			return in, err
		}
	}
	result, err := s.store.List(ctx, res.StorageResource(), so)
	if err != nil && selErr != nil {
		return nil, metav1.ListMeta{}, selErr
	}
	if err != nil {
		if errors.Is(err, storage.ErrCompacted) && opts.Continue != "" {
			// The snapshot is gone: offer a token that continues at the
			// current state, as kube-apiserver does.
			tok, _ := decodeContinue(opts.Continue)
			tok.Rev = -1
			e := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
			e.ErrStatus.ListMeta.Continue = encodeContinue(tok)
			return nil, metav1.ListMeta{}, e
		}
		return nil, metav1.ListMeta{}, storageError(err, res, "")
	}
	items := make([]*unstructured.Unstructured, len(result.Items))
	if err := onEveryCore(len(items), func(i int) (err error) {
		items[i], err = decodeStored(result.Items[i])
		return err
	}); err != nil {
		return nil, metav1.ListMeta{}, apierrors.NewInternalError(err)
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(result.Rev, 10)}
	// A selector of one name (in a namespace, for a namespaced kind) is
	// a read of that one key to kube-apiserver's store: nothing follows.
	_, oneName := sel.fields.RequiresExactMatch("metadata.name")
	oneKey := oneName && (!res.Namespaced || namespace != "")
	if result.More && len(result.Items) > 0 && !oneKey {
		last := result.Items[len(result.Items)-1]
		// The next page reads the revision this one did (after an
		// expired token's inconsistent page too, as kube's store).
		lm.Continue = encodeContinue(continueToken{Rev: result.Rev, Namespace: last.Namespace, Name: last.Name})
		lm.RemainingItemCount = result.Remaining
	}
	return items, lm, nil
}

// table builds a meta.k8s.io Table of objs.
func (s *Server) table(r *http.Request, req *resourceRequest, version string, objs []*unstructured.Unstructured, lm metav1.ListMeta) (*metav1.Table, error) {
	return tableOf(r, req.res.TableFor(req.version), version, objs, lm)
}

// tableOptions reads and validates the request's TableOptions
// (includeObject, noHeaders).
func tableOptions(r *http.Request) (metav1.TableOptions, error) {
	var opts metav1.TableOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	// In kube-apiserver's words: one error as it is, several as a list.
	switch errs := metav1validation.ValidateTableOptions(&opts); len(errs) {
	case 0:
		return opts, nil
	case 1:
		return opts, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
	default:
		return opts, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs))
	}
}

// tableOf prints objs with tc as a Table of meta.k8s.io/version, by the
// request's TableOptions.
func tableOf(r *http.Request, tc registry.TableConvertor, version string, objs []*unstructured.Unstructured, lm metav1.ListMeta) (*metav1.Table, error) {
	opts, err := tableOptions(r)
	if err != nil {
		return nil, err
	}
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + version},
		ListMeta: lm,
		Rows:     []metav1.TableRow{},
	}
	if !opts.NoHeaders {
		t.ColumnDefinitions = tc.Columns
	}
	for _, obj := range objs {
		row := metav1.TableRow{Cells: tc.Cells(obj)}
		switch opts.IncludeObject {
		case metav1.IncludeObject:
			data, _ := unstructuredjson.Marshal(obj.Object)
			if builtin.Scheme.Recognizes(obj.GroupVersionKind()) {
				// A built-in kind's, as its Go type encodes it.
				if typed, err := builtinJSON(data); err == nil {
					data = typed
				}
			}
			row.Object.Raw = data
		case metav1.IncludeNone:
		default:
			// Of the Table's own version, as kube-apiserver sets it.
			data, _ := json.Marshal(partialMetadata(obj, version))
			row.Object.Raw = data
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// writeOptions are the parameters common to create, update and patch.
type writeOptions struct {
	dryRun          bool
	fieldValidation string
	fieldManager    string
	// raw are the options as the client sent them.
	raw runtime.Object
}

func parseCreateOptions(r *http.Request) (writeOptions, error) {
	var opts metav1.CreateOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return writeOptions{}, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateCreateOptions(&opts); len(errs) > 0 {
		return writeOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)
	}
	opts.TypeMeta = metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}
	return writeOptions{dryRun: len(opts.DryRun) > 0, fieldValidation: opts.FieldValidation, fieldManager: managerName(opts.FieldManager, r.UserAgent()), raw: &opts}, nil
}

func parseUpdateOptions(r *http.Request) (writeOptions, error) {
	var opts metav1.UpdateOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return writeOptions{}, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateUpdateOptions(&opts); len(errs) > 0 {
		return writeOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "UpdateOptions"}, "", errs)
	}
	opts.TypeMeta = metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}
	return writeOptions{dryRun: len(opts.DryRun) > 0, fieldValidation: opts.FieldValidation, fieldManager: managerName(opts.FieldManager, r.UserAgent()), raw: &opts}, nil
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := parseCreateOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, _, yamlStrict, sent, err := readObjectBody(r, req.gvk(), bodyTypes(req.res)...)
	req.sent = sent
	if ye := (*yamlBodyError)(nil); errors.As(err, &ye) {
		err = undecodable(req, ye.body, ye.err)
	}
	if pe := (*protobufBodyError)(nil); errors.As(err, &pe) {
		err = pe.status(req.res.Kind, schemeName(req.res))
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := decodeObject(w, r, req, body, opts.fieldValidation, yamlStrict...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	req.options = opts.raw
	logRequestObject(r.Context(), req, obj)
	created, err := s.createObject(r.Context(), req, obj, opts.dryRun, opts.fieldManager)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondObject(w, r, req, http.StatusCreated, created)
}

// createObject runs the create path of kube-apiserver's generic registry:
// namespace and name checks, server-set fields, defaults, validation, the
// namespace lifecycle, then one store write. obj is in the request's
// version, where all but the write happens; the object returned is the one
// stored, in the storage version.
//
// manager is the field manager the create is recorded for in managedFields
// ("" records kube's "unknown", as for a request with no user agent); a
// PATCH's create is not recorded here: server-side apply has recorded it.
func (s *Server) createObject(ctx context.Context, req *resourceRequest, obj *unstructured.Unstructured, dryRun bool, manager string) (*unstructured.Unstructured, error) {
	res := req.res
	if res.Terminating && !req.isPatch {
		// kube-apiserver refuses the create verb only: a server-side
		// apply (patch) still creates.
		e := apierrors.NewMethodNotSupported(res.GroupResource(), "create")
		e.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
		return nil, e
	}
	if err := checkNamespace(req, obj); err != nil {
		return nil, err
	}
	if !req.isPatch {
		// As kube-apiserver's create handler, before the field manager
		// and admission see the object: what a client may not set of the
		// system's metadata is dropped.
		obj.SetCreationTimestamp(metav1.Time{})
		obj.SetUID("")
		obj.SetDeletionTimestamp(nil)
		obj.SetDeletionGracePeriodSeconds(nil)
		obj.SetSelfLink("")
	}
	dedupOwnerReferences(ctx, obj, false)
	if !req.isPatch {
		obj = s.trackUpdate(req, nil, obj, manager)
	}
	// Admission as kube-apiserver orders it: the namespace lifecycle and
	// the mutating webhooks, then the kind's own rules, then the
	// validating webhooks.
	// The refusal names the object as kube's admission names one whose
	// name is not generated yet.
	admittedName := obj.GetName()
	if admittedName == "" {
		admittedName = obj.GetGenerateName()
	}
	if admittedName == "" {
		admittedName = "Unknown"
	}
	if res.Namespaced {
		// The namespace's deletion waits for this create to be stored
		// (noted before the namespace is checked, so that a deletion
		// finalizing meanwhile sees it).
		defer s.creatingIn(obj.GetNamespace())()
	}
	if err := s.admitNamespace(ctx, res, obj.GetNamespace(), admittedName); err != nil {
		return nil, err
	}
	options := &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}, FieldManager: manager}
	if dryRun {
		options.DryRun = []string{metav1.DryRunAll}
	}
	// The request is named as the client named the object, for the
	// mutating webhooks and the validating ones alike (a webhook that
	// renames the object does not rename the request), as kube-apiserver
	// names it once; only a generated name is the object's.
	clientName := obj.GetName()
	attr := s.admissionAttributes(req, obj, nil, admission.Create, options, dryRun)
	if err := s.mutateAndNormalize(ctx, req, attr, obj); err != nil {
		return nil, err
	}
	dedupOwnerReferences(ctx, obj, true)
	// A generated name that is taken is generated again, as kube-apiserver
	// tries up to 8 names; each try runs the rules and the validating
	// webhooks on the object with its name.
	generate := obj.GetName() == "" && obj.GetGenerateName() != ""
	var stored *unstructured.Unstructured
	for attempt := 1; ; attempt++ {
		if generate {
			obj.SetName(generateName(obj.GetGenerateName()))
		}
		var err error
		stored, err = s.admitAndStore(ctx, req, obj, clientName, options, dryRun)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, err
			}
			break
		}
		if generate && attempt < maxNameGenerationCreateAttempts {
			continue
		}
		return nil, s.alreadyExists(ctx, req, obj, generate)
	}
	return stored, nil
}

// maxNameGenerationCreateAttempts is how many generated names a create
// tries, as kube-apiserver.
const maxNameGenerationCreateAttempts = 8

// generateName makes a name from a generateName prefix (a variable for
// tests that need names to collide).
var generateName = names.SimpleNameGenerator.GenerateName

// admitAndStore finishes a create of obj: the server-set fields, the kind's
// rules, the validating webhooks, then the store (a dry run only checks the
// name is free, as kube-apiserver's dry-run storage). It returns the object
// stored, in the storage version.
func (s *Server) admitAndStore(ctx context.Context, req *resourceRequest, obj *unstructured.Unstructured, clientName string, options *metav1.CreateOptions, dryRun bool) (*unstructured.Unstructured, error) {
	res := req.res
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(now)
	if req.isPatch {
		// A server-side apply that creates: kube's store clears the
		// resourceVersion of an object it creates on update.
		obj.SetResourceVersion("")
	}
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetSelfLink("")
	// A kind that tracks its generation starts it at 1; another (a
	// namespace) keeps what the client sent, as kube's strategies.
	if res.Strategy.TracksGeneration() {
		obj.SetGeneration(1)
	}
	res.Strategy.PrepareForCreate(ctx, obj)
	if errs := res.Strategy.Validate(registry.WithDecodedJSON(ctx, req.decodedFrom), obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(objectGroupKind(res, obj), obj.GetName(), errs)
	}
	// Then every object's metadata rules, as kube-apiserver's BeforeCreate
	// checks them after the kind's own.
	if errs := apimachineryvalidation.ValidateObjectMetaAccessor(obj, res.Namespaced, path.ValidatePathSegmentName, field.NewPath("metadata")); len(errs) > 0 {
		return nil, apierrors.NewInvalid(objectGroupKind(res, obj), obj.GetName(), errs)
	}
	if ws, ok := res.Strategy.(registry.WarningStrategy); ok {
		addWarnings(ctx, ws.WarningsOnCreate(ctx, obj))
	}
	if obj.GetName() == "" {
		// Validation reports a missing name; this guards the store.
		return nil, apierrors.NewBadRequest("name is required")
	}
	// The validating webhooks see the object as it will be stored, with
	// its generated name.
	named := *req
	if named.name == "" {
		named.name = clientName // else the object's generated name
		named.unnamedCreate = clientName == ""
	}
	if err := s.validateAdmission(ctx, s.admissionAttributes(&named, obj, nil, admission.Create, options, dryRun)); err != nil {
		return nil, err
	}
	stored, err := inStorageVersion(req, obj)
	if err != nil {
		return nil, err
	}
	key := storageKey(res, obj.GetNamespace(), obj.GetName())
	if rv := obj.GetResourceVersion(); !dryRun && rv != "" {
		// kube-apiserver's storage refuses a resourceVersion it reads as
		// a revision (a number other than 0), after admission (its dry
		// run does not): a client re-creating an object it read. Its
		// answer is a 500 with this message; bad input is a 400 here.
		// Any other (0, or not a number) it clears and stores the object.
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n != 0 {
			return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
		}
	}
	if dryRun {
		if _, err := s.store.Get(ctx, key); err == nil {
			return nil, apierrors.NewAlreadyExists(res.GroupResource(), obj.GetName())
		} else if !errors.Is(err, storage.ErrNotFound) {
			return nil, storageError(err, res, obj.GetName())
		}
		return stored, nil
	}
	if err := storeShedding(req, stored, func() error { _, err := s.store.Create(ctx, key, encoder(res, stored)); return err }); err != nil {
		return nil, storageError(err, res, obj.GetName())
	}
	return stored, nil
}

// inStorageVersion returns the object req writes, obj, converted to the
// storage version (obj itself, coerced in place, when it is in it), as
// kube-apiserver's storage encodes a write: a custom resource through its
// CRD's conversion, then pruned by the storage version's schema, and
// coerced for storage when the mutating webhooks changed it.
func inStorageVersion(req *resourceRequest, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	res := req.res
	stored := obj
	if obj.GetAPIVersion() != (schema.GroupVersion{Group: res.Group, Version: res.StorageVersion}).String() {
		stored = obj.DeepCopy()
		// A failed conversion (webhook) is answered as it is: a 500 with
		// the converter's message, as kube-apiserver's storage encoder
		// fails.
		if err := registry.ConvertForWrite(res.Strategy, stored, res.StorageVersion); err != nil {
			return nil, err
		}
	}
	if c, ok := res.Strategy.(registry.StorageCoercer); ok && req.mutated {
		// A failure is the storage encoder's, answered as it is (500).
		if err := c.CoerceForStorage(stored); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// alreadyExists is kube-apiserver's answer to a create of a name that is
// taken: a generated one is a conflict of generated names, and an object
// still being deleted is said to be.
func (s *Server) alreadyExists(ctx context.Context, req *resourceRequest, obj *unstructured.Unstructured, generated bool) error {
	gr := req.res.GroupResource()
	err := apierrors.NewAlreadyExists(gr, obj.GetName())
	if generated {
		err = apierrors.NewGenerateNameConflict(gr, obj.GetName(), 1)
	}
	if existing, _, getErr := s.getObject(ctx, req.res, obj.GetNamespace(), obj.GetName()); getErr == nil && existing.GetDeletionTimestamp() != nil {
		err.ErrStatus.Message = "object is being deleted: " + err.ErrStatus.Message
	}
	return err
}

// checkNamespace fills in or checks the object's namespace against the URL.
func checkNamespace(req *resourceRequest, obj *unstructured.Unstructured) error {
	if !req.res.Namespaced {
		if obj.GetNamespace() != "" {
			obj.SetNamespace("")
		}
		return nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.namespace)
	}
	if obj.GetNamespace() != req.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// checkPathName refuses a name no storage key can hold ("." or "..", or
// one holding "/" or "%"), as kube-apiserver's store does when it makes
// the key of a get, update, patch or delete (after the request's body and
// options are read).
func checkPathName(name string) error {
	if msgs := path.IsValidPathSegmentName(name); len(msgs) != 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
	}
	return nil
}

// checkName refuses an object written to the URL of another name, or of
// none, in kube-apiserver's words.
func checkName(name, urlName string) error {
	if name == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", urlName))
	}
	if name != urlName {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, urlName))
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := parseUpdateOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, _, yamlStrict, sent, err := readObjectBody(r, req.gvk(), bodyTypes(req.res)...)
	req.sent = sent
	if ye := (*yamlBodyError)(nil); errors.As(err, &ye) {
		err = undecodable(req, ye.body, ye.err)
	}
	if pe := (*protobufBodyError)(nil); errors.As(err, &pe) {
		err = pe.status(req.res.Kind, schemeName(req.res))
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, err := decodeObject(w, r, req, body, opts.fieldValidation, yamlStrict...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	logRequestObject(r.Context(), req, obj)
	// The namespace first, then the name, as kube-apiserver checks them.
	if err := checkNamespace(req, obj); err != nil {
		writeError(w, r, err)
		return
	}
	if err := checkName(obj.GetName(), req.name); err != nil {
		writeError(w, r, err)
		return
	}
	req.options = opts.raw
	updated, err := s.updateObject(r.Context(), req, opts.dryRun, false, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		req.decodedFrom = body // again: a try before may have left a webhook's
		return s.trackUpdate(req, current, obj.DeepCopy(), opts.fieldManager), nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.respondObject(w, r, req, http.StatusOK, updated)
}

// updateFunc computes the new object from the current one, both in the
// request's version.
type updateFunc func(current *unstructured.Unstructured) (*unstructured.Unstructured, error)

// updateObject runs kube-apiserver's update path: read, compute, keep
// server-owned fields, validate, and write with the read revision as the
// precondition, retrying when the client set no resourceVersion. With
// patched, compute applies a patch to the current object: the result keeps
// the current resourceVersion unless the patch set another, which is then
// the client's precondition (as kube's store checks a patched object's).
//
// All but the write happens in the request's version; the object returned
// is the one stored, in the storage version.
func (s *Server) updateObject(ctx context.Context, req *resourceRequest, dryRun, patched bool, compute updateFunc) (*unstructured.Unstructured, error) {
	if err := checkPathName(req.name); err != nil {
		return nil, err
	}
	res := req.res
	for attempt := 0; ; attempt++ {
		stored, err := s.store.Get(ctx, storageKey(res, req.namespace, req.name))
		if err != nil {
			return nil, storageError(err, res, req.name)
		}
		rev := stored.Rev
		old, err := decodeStored(stored)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		// As kube-apiserver decodes a stored object for the request:
		// defaulted by the schema of the version it was stored in (a
		// default added since it was written holds in the old object too:
		// transition rules, ratcheting, generation), then converted to the
		// request's version and pruned by its schema. A failed conversion
		// fails as a read through that version does.
		if err := res.Strategy.Convert(old, req.version); err != nil {
			return nil, err
		}
		obj, err := compute(old.DeepCopy())
		if err != nil {
			return nil, err
		}
		if !patched {
			dedupOwnerReferences(ctx, obj, false)
		}
		if uid := obj.GetUID(); uid != "" && uid != old.GetUID() {
			return nil, apierrors.NewConflict(res.GroupResource(), req.name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.GetUID()))
		}
		options := &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}}
		if dryRun {
			options.DryRun = []string{metav1.DryRunAll}
		}
		var attr admission.Attributes
		if req.subresource == "scale" {
			// Admission sees the autoscaling/v1 Scales, as kube's.
			if attr, err = s.admitScale(ctx, req, obj, old, options, dryRun); err != nil {
				return nil, err
			}
		} else {
			attr = s.admissionAttributes(req, obj, old, admission.Update, options, dryRun)
			if err := s.mutateAndNormalize(ctx, req, attr, obj); err != nil {
				return nil, err
			}
			dedupOwnerReferences(ctx, obj, true)
		}
		// Fields only the server sets, kept as kube-apiserver's
		// BeforeUpdate keeps them, after the mutating webhooks (which see
		// the object as the client sent it): the uid unless one is given
		// (a changed one is refused as immutable), the creation time, the
		// generation, a deletion under way (a deletionTimestamp or grace
		// period a client adds is left for validation to refuse).
		if obj.GetUID() == "" {
			obj.SetUID(old.GetUID())
		}
		obj.SetCreationTimestamp(old.GetCreationTimestamp())
		if old.GetDeletionTimestamp() != nil {
			obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
		}
		if old.GetDeletionGracePeriodSeconds() != nil && obj.GetDeletionGracePeriodSeconds() == nil {
			obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
		}
		obj.SetGeneration(old.GetGeneration())
		obj.SetSelfLink("")
		// The resourceVersion precondition, checked after the mutating
		// admission as kube-apiserver's store checks it (a webhook that
		// denies answers first).
		// As kube-apiserver's store reads it, the resourceVersion is a
		// number: "" and "0" are none, which the kind must allow (an
		// unconditional update) or which is a 422; a patch that leaves
		// the stored one in place sets none of its own (its write is made
		// again on a race), one that removes it sets none at all.
		clientRV := obj.GetResourceVersion()
		want, parseErr := strconv.ParseUint(clientRV, 10, 64)
		conditional := false
		switch {
		case patched && clientRV == old.GetResourceVersion():
		case clientRV != "" && parseErr != nil:
			// kube-apiserver answers its parse error as a 500; it can
			// match no stored version.
			return nil, apierrors.NewConflict(res.GroupResource(), req.name, errors.New(registryConflictMessage))
		case want == 0 && !res.Strategy.AllowUnconditionalUpdate():
			// As kube-apiserver's store words it: under the resource's name.
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: res.Group, Kind: res.Plural}, req.name, fieldErrorRVRequired())
		case want != 0 && strconv.FormatUint(want, 10) != old.GetResourceVersion():
			return nil, apierrors.NewConflict(res.GroupResource(), req.name, errors.New(registryConflictMessage))
		case want != 0:
			conditional = true
		}
		obj.SetResourceVersion(old.GetResourceVersion())
		if req.subresource == "finalize" {
			// As kube-apiserver's namespace finalize strategy: all but
			// status changes (spec.finalizers, metadata).
			delete(obj.Object, "status")
			if status, ok := old.Object["status"]; ok {
				obj.Object["status"] = runtime.DeepCopyJSONValue(status)
			}
			fs := res.Strategy.(registry.FinalizeStrategy)
			if errs := append(commonMetaErrors(res, obj, old), fs.ValidateFinalizeUpdate(ctx, obj, old)...); len(errs) > 0 {
				return nil, apierrors.NewInvalid(res.GroupKind(), obj.GetName(), errs)
			}
		} else if req.subresource == "status" {
			st := res.Strategy.(registry.StatusStrategy)
			st.PrepareForStatusUpdate(ctx, obj, old)
			if errs := append(commonMetaErrors(res, obj, old), st.ValidateStatusUpdate(ctx, obj, old)...); len(errs) > 0 {
				return nil, apierrors.NewInvalid(res.GroupKind(), obj.GetName(), errs)
			}
		} else {
			res.Strategy.PrepareForUpdate(ctx, obj, old)
			decoded := registry.WithDecodedJSON(ctx, req.decodedFrom)
			if res.Strategy.TracksGeneration() && res.Strategy.SpecChanged(decoded, obj, old) {
				obj.SetGeneration(old.GetGeneration() + 1)
			}
			if errs := append(commonMetaErrors(res, obj, old), res.Strategy.ValidateUpdate(decoded, obj, old)...); len(errs) > 0 {
				return nil, apierrors.NewInvalid(objectGroupKind(res, obj), obj.GetName(), errs)
			}
			if ws, ok := res.Strategy.(registry.WarningStrategy); ok {
				addWarnings(ctx, ws.WarningsOnUpdate(ctx, obj, old))
			}
		}
		// As kube's store: a write that changes nothing but the times of
		// managedFields keeps the old ones, so that it writes nothing (a
		// no-op apply would move the resourceVersion and wake watchers).
		if same, err := fieldmanager.IgnoreManagedFieldsTimestampsTransformer(ctx, obj, old); err == nil {
			obj = same.(*unstructured.Unstructured)
		}
		if err := s.validateAdmission(ctx, attr); err != nil {
			return nil, err
		}
		out, err := inStorageVersion(req, obj)
		if err != nil {
			return nil, err
		}
		if dryRun {
			return out, nil
		}
		key := storageKey(res, req.namespace, req.name)
		// The last finalizer of an object being deleted is gone: the
		// update completes the deletion instead, as kube-apiserver's store
		// does. The deleted object (the DELETED event's) is the stored
		// one, at the deletion's resourceVersion; the client is answered
		// with the object of its update, at the resourceVersion it had.
		if old.GetDeletionTimestamp() != nil && len(out.GetFinalizers()) == 0 && !holdsDeletion(res, out) {
			deleted, derr := decodeStored(stored)
			if derr != nil {
				return nil, apierrors.NewInternalError(derr)
			}
			_, err = s.store.Delete(ctx, key, rev, encoder(res, deleted))
		} else if sameAsStored(out, stored) {
			// Nothing changed: kube-apiserver skips the write and keeps
			// the resourceVersion.
			return out, nil
		} else {
			err = storeShedding(req, out, func() error { _, err := s.store.Update(ctx, key, rev, encoder(res, out)); return err })
		}
		// Without a client precondition a write that lost a race is made
		// again on what won, for as long as the request lasts, as kube's
		// store loops (no 409 for a patch without a resourceVersion).
		if errors.Is(err, storage.ErrConflict) && !conditional && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, storageError(err, res, req.name)
		}
		return out, nil
	}
}

// commonMetaErrors are the checks kube-apiserver's BeforeUpdate makes of
// every object's metadata, reported before the kind's own (which may
// repeat some, as under kube).
func commonMetaErrors(res *registry.Resource, obj, old *unstructured.Unstructured) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(obj, res.Namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	return append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))...)
}

// objectGroupKind is the kind an invalid write is reported as: the
// object's own, as kube-apiserver reports it (a custom resource whose body
// names another kind is invalid for that).
func objectGroupKind(res *registry.Resource, obj *unstructured.Unstructured) schema.GroupKind {
	if kind := obj.GetKind(); kind != "" {
		return schema.GroupKind{Group: res.Group, Kind: kind}
	}
	return res.GroupKind()
}

// dedupOwnerReferences drops an owner reference equal to an earlier one,
// with kube-apiserver's warning naming the duplicate uids. Creates and
// updates are deduplicated before and after the mutating webhooks, patches
// after them only (hence kube's two wordings).
func dedupOwnerReferences(ctx context.Context, obj *unstructured.Unstructured, afterMutation bool) {
	refs := obj.GetOwnerReferences()
	if len(refs) < 2 {
		return
	}
	var kept []metav1.OwnerReference
	var duplicates []string
	for _, ref := range refs {
		if slices.ContainsFunc(kept, func(k metav1.OwnerReference) bool { return apiequality.Semantic.DeepEqual(k, ref) }) {
			duplicates = append(duplicates, string(ref.UID))
			continue
		}
		kept = append(kept, ref)
	}
	if len(duplicates) == 0 {
		return
	}
	format := ".metadata.ownerReferences contains duplicate entries; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: %v"
	if afterMutation {
		format = ".metadata.ownerReferences contains duplicate entries after mutating admission happens; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: %v"
	}
	warning.AddWarning(ctx, "", fmt.Sprintf(format, strings.Join(duplicates, ", ")))
	obj.SetOwnerReferences(kept)
}

// addWarnings adds each warning to the response as a Warning header.
func addWarnings(ctx context.Context, warnings []string) {
	for _, w := range warnings {
		warning.AddWarning(ctx, "", w)
	}
}

// holdsDeletion tells whether res still holds obj, being deleted, beyond
// its metadata.finalizers.
func holdsDeletion(res *registry.Resource, obj *unstructured.Unstructured) bool {
	ds, ok := res.Strategy.(registry.DeleteStrategy)
	return ok && ds.HoldsDeletion(obj)
}

func sameObject(a, b *unstructured.Unstructured) bool {
	ja, _ := unstructuredjson.Marshal(a.Object)
	jb, _ := unstructuredjson.Marshal(b.Object)
	return string(ja) == string(jb)
}

// sameAsStored tells whether obj, with the stored resourceVersion, would
// be stored as the same bytes: as kube-apiserver's storage, which writes
// nothing then (a default only the schema adds does not count as a change
// for the comparison with what was decoded; it does for the bytes).
func sameAsStored(obj *unstructured.Unstructured, stored *storage.Object) bool {
	data, err := unstructuredjson.Marshal(obj.Object)
	return err == nil && bytes.Equal(data, stored.Data)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := parseDeleteOptions(r)
	if err == nil {
		err = checkPathName(req.name)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, deleted, err := s.deleteObject(r.Context(), req, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if !deleted || req.res.ReturnDeletedObject {
		code := http.StatusOK
		if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
			// kube-apiserver's 202 for a cascading delete that did not
			// happen at once.
			code = http.StatusAccepted
		}
		s.respondObject(w, r, req, code, obj)
		return
	}
	// In the form negotiated before the delete; a transformation asked
	// for leaves a Status as it is (kube-apiserver's doTransformObject),
	// in the media type asked for.
	negotiated, _ := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList")
	writeObject(w, r, output{yaml: negotiated.yaml, protobuf: negotiated.protobuf, pretty: negotiated.pretty}, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  req.name,
			Group: req.res.Group,
			Kind:  req.res.Plural,
			UID:   obj.GetUID(),
		},
	})
}

// parseDeleteOptions reads DeleteOptions as kube-apiserver does: from the
// body when it has one (the query is then not read), else from the query.
// A body is decoded by kube's own decoder of meta.k8s.io options; one it
// refuses is a 400 in its words (kube's delete handlers pass the error on
// as no Status, a 500 with no reason; bad input is a 400 here).
func parseDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	var body []byte
	var mt string
	if r.ContentLength != 0 {
		var err error
		_, mt, _, body, err = readObjectBody(r, nil, "application/json", "application/yaml", protobufMediaType)
		ye, pe := (*yamlBodyError)(nil), (*protobufBodyError)(nil)
		switch {
		case errors.As(err, &ye):
			body, mt = ye.body, "application/yaml"
		case errors.As(err, &pe):
			body, mt = pe.body, protobufMediaType
		case err != nil:
			return nil, err
		}
	}
	if len(body) > 0 {
		codecs := apihelpers.GetMetaInternalVersionCodecs()
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		if !ok {
			return nil, unsupportedMediaType([]string{"application/json", "application/yaml", protobufMediaType})
		}
		defaultGVK := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := codecs.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion).Decode(body, &defaultGVK, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if obj != opts {
			return nil, apierrors.NewBadRequest("decoded object cannot be converted to DeleteOptions")
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// As kube-apiserver 1.33, whose AllowUnsafeMalformedObjectDeletion
	// feature is off: the option is dropped before anything reads it.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// deleteObject deletes one object as kube-apiserver's generic registry
// does: preconditions, then either a pending deletion (finalizers; the
// object is returned with deletionTimestamp set, deleted=false) or the
// removal (deleted=true). The returned object is in the storage version.
func (s *Server) deleteObject(ctx context.Context, req *resourceRequest, opts *metav1.DeleteOptions) (*unstructured.Unstructured, bool, error) {
	res, namespace, name := req.res, req.namespace, req.name
	dryRun := len(opts.DryRun) > 0
	// As kube-apiserver hands them to admission: meta.k8s.io/v1, and a
	// negative grace period read as 1s.
	opts.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/v1"}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		opts.GracePeriodSeconds = &one
	}

	for attempt := 0; ; attempt++ {
		obj, rev, err := s.getObject(ctx, res, namespace, name)
		if err != nil {
			return nil, false, err
		}
		// The preconditions fail early, before admission, as in
		// kube-apiserver's BeforeDelete (and in its words), or by the
		// kind's own rules.
		if res.CheckDelete != nil {
			done, err := res.CheckDelete(obj, opts)
			if err != nil {
				return nil, false, err
			}
			if done {
				return obj, false, nil
			}
		} else if p := opts.Preconditions; p != nil {
			gr := schema.GroupResource{Group: res.Group, Resource: res.Kind}
			if p.UID != nil && *p.UID != obj.GetUID() {
				return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, obj.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
				return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, obj.GetResourceVersion()))
			}
		}
		// kube-apiserver reads the object through the request's version
		// first: a conversion that fails fails the delete, and nothing is
		// deleted. (A deletecollection converted its list already.)
		current := obj.DeepCopy()
		if req.version != res.StorageVersion && !req.inCollection {
			if err := res.Strategy.Convert(current, req.version); err != nil {
				return nil, false, err
			}
		}
		// Admission sees the object being deleted, as kube-apiserver's
		// delete validation gives it to both mutating and validating
		// webhooks.
		if !req.noAdmission {
			attr := s.admissionAttributes(req, nil, current, admission.Delete, opts, dryRun)
			if err := s.mutate(ctx, attr); err != nil {
				return nil, false, err
			}
			if err := s.validateAdmission(ctx, attr); err != nil {
				return nil, false, err
			}
		}
		// Finalizers the propagation policy asks for.
		fins := obj.GetFinalizers()
		switch {
		case res.FirstDeleteOnlyMarks && obj.GetDeletionTimestamp() == nil:
			// None: the kind's own marking (a CRD's cleanup finalizer).
		case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan,
			opts.OrphanDependents != nil && *opts.OrphanDependents:
			fins = withFinalizer(withoutFinalizer(fins, metav1.FinalizerDeleteDependents), metav1.FinalizerOrphanDependents)
		case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground:
			fins = withFinalizer(withoutFinalizer(fins, metav1.FinalizerOrphanDependents), metav1.FinalizerDeleteDependents)
		case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationBackground,
			opts.OrphanDependents != nil && !*opts.OrphanDependents:
			fins = withoutFinalizer(withoutFinalizer(fins, metav1.FinalizerOrphanDependents), metav1.FinalizerDeleteDependents)
		}
		if len(fins) > 0 {
			fins = fins[:len(fins):len(fins)]
		}
		obj.SetFinalizers(fins)
		pending := len(fins) > 0
		if ds, ok := res.Strategy.(registry.DeleteStrategy); ok {
			p, err := ds.PrepareForDelete(ctx, obj, opts)
			if err != nil {
				return nil, false, err
			}
			pending = pending || p
		}
		key := storageKey(res, namespace, name)
		if !pending {
			if dryRun {
				return obj, true, nil
			}
			_, err = s.store.Delete(ctx, key, rev, encoder(res, obj))
			if errors.Is(err, storage.ErrConflict) && ctx.Err() == nil {
				continue
			}
			if err != nil {
				return nil, false, storageError(err, res, name)
			}
			return obj, true, nil
		}
		if obj.GetDeletionTimestamp() == nil {
			now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
			obj.SetDeletionTimestamp(&now)
			// The generic store's marking: marking for deletion is a change
			// of the object's intent, so its generation moves. (A kind with
			// a DELETE of its own sets the timestamp alone.)
			if res.CheckDelete == nil {
				zero := int64(0)
				obj.SetDeletionGracePeriodSeconds(&zero)
				if g := obj.GetGeneration(); g > 0 {
					obj.SetGeneration(g + 1)
				}
			}
		}
		if dryRun || sameObject(obj, current) {
			// Already marked (a repeated DELETE): nothing to write.
			return obj, false, nil
		}
		_, err = s.store.Update(ctx, key, rev, encoder(res, obj))
		if errors.Is(err, storage.ErrConflict) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, false, storageError(err, res, name)
		}
		s.finalizer.enqueue(res, namespace, name)
		s.cascades.enqueue(res, obj)
		return obj, false, nil
	}
}

func withFinalizer(list []string, f string) []string {
	for _, x := range list {
		if x == f {
			return list
		}
	}
	return append(list, f)
}

func withoutFinalizer(list []string, f string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, req *resourceRequest) {
	opts, err := parseDeleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// (A ?watch= is validated as for a list and otherwise ignored, as by
	// kube-apiserver: the collection is deleted.)
	listOpts, err := parseListOptions(r, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, lm, err := s.listObjects(r.Context(), req.res, req.version, req.namespace, listOpts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// As kube-apiserver's store: the list is read through the request's
	// version (a conversion that fails deletes nothing), and the answer is
	// that list, as read (a page of it with its continue token).
	listed := make([]*unstructured.Unstructured, len(items))
	for i, obj := range items {
		listed[i] = obj.DeepCopy()
	}
	if err := convertAll(req.res.Strategy, listed, req.version); err != nil {
		writeError(w, r, err)
		return
	}
	for _, obj := range items {
		item := *req
		item.namespace, item.name, item.inCollection = obj.GetNamespace(), obj.GetName(), true
		// Each item gets its own copy of the options, as kube's store
		// hands each delete: a kind's DELETE may fill them in (a CRD's or
		// a namespace's takes its UID as the precondition), and that must
		// not carry over to the next item.
		if _, _, err := s.deleteObject(r.Context(), &item, opts.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			writeError(w, r, err)
			return
		}
	}
	// In the form negotiated before the deletes: the list deleted, or
	// its Table or PartialObjectMetadataList (a PartialObjectMetadata
	// is kube-apiserver's 406, the deletes done).
	negotiated, _ := negotiate(r, hasProtobuf(req.res), "Table", "PartialObjectMetadata", "PartialObjectMetadataList")
	if negotiated.as != "" {
		s.writeListAs(w, r, req, negotiated, listed, lm)
		return
	}
	bareListItems(req.res, listed)
	out := make([]interface{}, len(listed))
	for i, obj := range listed {
		out[i] = obj.Object
	}
	writeObject(w, r, negotiated, http.StatusOK, map[string]interface{}{
		"apiVersion": schema.GroupVersion{Group: req.res.Group, Version: req.version}.String(),
		"kind":       req.res.ListKind,
		"metadata":   lm,
		"items":      out,
	})
}

var (
	_ = meta.Accessor
	_ = types.UID("")
)
