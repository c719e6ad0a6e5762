// Package customresource turns a CustomResourceDefinition into a served
// resource: its descriptor for the registry and a strategy made of
// apiextensions-apiserver's own rules (structural schemas, pruning,
// defaulting, validation with CEL rules and ratcheting, status and scale
// subresources, printer columns, selectable fields, conversion).
package customresource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	crstrategy "k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/kapi-dev/kapi/openapi"
	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// version holds what one version of a CRD needs.
type version struct {
	structural *structuralschema.Structural
	// hasDefaults tells whether the schema sets a default anywhere:
	// without one, defaulting changes nothing and is skipped.
	hasDefaults bool
	// hasEmbedded tells whether the schema has an embedded resource
	// (x-kubernetes-embedded-resource) anywhere: without one, there is no
	// embedded metadata to coerce on a read.
	hasEmbedded bool
	table       registry.TableConvertor
	// kube and kubeStatus are apiextensions-apiserver's rules of the
	// version (its schema, CEL rules, subresources).
	kube       kubeStrategy
	kubeStatus kubeStatusStrategy
}

// strategy serves custom resources of one CRD. Objects reach it in the
// version of the request, as they reach kube-apiserver's per-version
// strategies.
type strategy struct {
	gk             schema.GroupKind
	storageVersion string
	versions       map[string]*version
	converter      runtime.ObjectConvertor
	// webhookConversion: the converter calls the CRD's webhook.
	webhookConversion bool
}

// kubeStrategy is the part of apiextensions-apiserver's custom resource
// strategy kapi calls (its type is unexported).
type kubeStrategy interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
	GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
}

// kubeStatusStrategy is the /status part of it.
type kubeStatusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
}

// New builds the served resource of crd, whose names must be accepted.
// converters makes the version converter of the CRD (None or Webhook).
func New(crd *apiextensionsv1.CustomResourceDefinition, converters *conversion.CRConverterFactory) (*registry.Resource, error) {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(crd, internal, nil); err != nil {
		return nil, err
	}
	s := &strategy{gk: schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Status.AcceptedNames.Kind}, versions: map[string]*version{}}
	res := &registry.Resource{
		Group:      crd.Spec.Group,
		Kind:       crd.Status.AcceptedNames.Kind,
		ListKind:   crd.Status.AcceptedNames.ListKind,
		Plural:     crd.Status.AcceptedNames.Plural,
		Singular:   crd.Status.AcceptedNames.Singular,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		ShortNames: crd.Status.AcceptedNames.ShortNames,
		Categories: crd.Status.AcceptedNames.Categories,
		Strategy:   s,
		Custom:     true,
		// kube's custom resource converter words an unknown field so.
		OwnFieldLabelErrors: true,
		// Custom resources take no strategic merge patch (no GoType: 415).
		VersionTables:       map[string]registry.TableConvertor{},
		DeprecationWarnings: map[string]string{},
		StatusVersions:      map[string]bool{},
		ScaleVersions:       map[string]*registry.Scale{},
		ReplicasPaths:       managedfields.ResourcePathMappings{},
	}
	fieldLabels := map[string]func(runtime.Object) (labels.Set, fields.Set, error){}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			res.StorageVersion = v.Name
		}
		if !v.Served {
			continue
		}
		res.Versions = append(res.Versions, v.Name)
		if v.Deprecated {
			if v.DeprecationWarning != nil {
				res.DeprecationWarnings[v.Name] = *v.DeprecationWarning
			} else {
				res.DeprecationWarnings[v.Name] = defaultDeprecationWarning(v.Name, &crd.Spec)
			}
		}
	}
	registry.SortVersions(res.Versions)
	s.storageVersion = res.StorageVersion
	for _, v := range crd.Spec.Versions {
		internalSchema, err := apiextensions.GetSchemaForVersion(internal, v.Name)
		if err != nil {
			return nil, err
		}
		if internalSchema == nil || internalSchema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("version %s of %s has no schema", v.Name, crd.Name)
		}
		structural, err := structuralschema.NewStructural(internalSchema.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s of %s: %v", v.Name, crd.Name, err)
		}
		// The defaults are served pruned, as kube-apiserver serves them:
		// what the schema does not know, and the unknown fields of an
		// embedded object's metadata, never reach an object. (The schema
		// is a copy: the defaults are shared with the CRD.)
		structural = structural.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(structural); err != nil {
			return nil, fmt.Errorf("version %s of %s: %v", v.Name, crd.Name, err)
		}
		ver := &version{structural: structural, hasDefaults: hasDefaults(structural), hasEmbedded: hasEmbedded(structural)}
		columns := v.AdditionalPrinterColumns
		if len(columns) == 0 {
			// kube's default column, described as the field it shows.
			columns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
				Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}}
		}
		tc, err := tableconvertor.New(columns)
		if err != nil {
			return nil, err
		}
		ver.table = tableFrom(tc)
		res.VersionTables[v.Name] = ver.table
		s.versions[v.Name] = ver

		// Each version's rules validate what is written through it.
		validator, _, err := apiservervalidation.NewSchemaValidator(internalSchema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		subresources, err := apiextensions.GetSubresourcesForVersion(internal, v.Name)
		if err != nil {
			return nil, err
		}
		var statusValidator apiservervalidation.SchemaValidator
		var statusSub *apiextensions.CustomResourceSubresourceStatus
		var scaleSub *apiextensions.CustomResourceSubresourceScale
		storage := v.Name == res.StorageVersion
		if subresources != nil && subresources.Status != nil {
			statusSub = subresources.Status
			res.StatusVersions[v.Name] = v.Served
			res.Status = res.Status || storage
			if st, ok := internalSchema.OpenAPIV3Schema.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, err
				}
			}
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		res.ReplicasPaths[gv] = nil
		if subresources != nil && subresources.Scale != nil {
			scaleSub = subresources.Scale
			res.ReplicasPaths[gv] = replicasPath(scaleSub.SpecReplicasPath)
			sc := &registry.Scale{SpecReplicasPath: scaleSub.SpecReplicasPath, StatusReplicasPath: scaleSub.StatusReplicasPath}
			if scaleSub.LabelSelectorPath != nil {
				sc.LabelSelectorPath = *scaleSub.LabelSelectorPath
			}
			scaleTable, err := tableconvertor.New(scaleColumns(sc))
			if err != nil {
				return nil, err
			}
			sc.Table = tableFrom(scaleTable)
			if v.Served {
				res.ScaleVersions[v.Name] = sc
			}
			if storage {
				res.Scale = sc
			}
		}
		kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Status.AcceptedNames.Kind}
		kube := crstrategy.NewStrategy(scheme, res.Namespaced, kind, validator, statusValidator, structural, statusSub, scaleSub, v.SelectableFields)
		ver.kube = kube
		if statusSub != nil {
			ver.kubeStatus = crstrategy.NewStatusStrategy(kube)
		}
		fieldLabels[v.Name] = kube.GetAttrs
	}
	// A version's selectable fields, read from the object as served in
	// that version (the selection converts it first).
	res.FieldLabels = func(v string, u *unstructured.Unstructured) fields.Set {
		getAttrs, ok := fieldLabels[v]
		if !ok {
			getAttrs = fieldLabels[res.StorageVersion]
		}
		_, set, err := getAttrs(u)
		if err != nil {
			return fields.Set{}
		}
		return set
	}
	if res.StorageVersion == "" {
		return nil, fmt.Errorf("%s has no storage version", crd.Name)
	}
	// The SSA type converter and the OpenAPI documents are built on first
	// use, from a copy of the CRD: building them takes ~2 ms and ~4 ms per
	// version, which a kapi restarted on hundreds of CRDs would spend
	// before serving (kube-apiserver too builds a CRD's serving parts on
	// its first request).
	own := crd.DeepCopy()
	res.TypeConverter = openapi.LazyTypeConverter(func() (managedfields.TypeConverter, error) {
		tc, err := openapi.CustomResourceTypeConverter(own)
		if err != nil {
			return nil, fmt.Errorf("schemas of %s for server-side apply: %w", own.Name, err)
		}
		return tc, nil
	})
	res.OpenAPIV3, res.OpenAPIV2 = openAPIDocuments(own, res.Versions)
	safe, _, err := converters.NewConverter(crd)
	if err != nil {
		return nil, err
	}
	s.converter = safe
	s.webhookConversion = crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	return res, nil
}

// replicasPath is a /scale subresource's specReplicasPath (".spec.replicas")
// as a field path.
func replicasPath(jsonPath string) fieldpath.Path {
	var path fieldpath.Path
	for _, name := range strings.Split(strings.TrimPrefix(jsonPath, "."), ".") {
		path = append(path, fieldpath.PathElement{FieldName: &name})
	}
	return path
}

// defaultDeprecationWarning is kube-apiserver's warning for a deprecated
// version without one of its own: it names the newest served version newer
// than it that is not deprecated, if there is one.
func defaultDeprecationWarning(deprecated string, spec *apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", spec.Group, deprecated, spec.Names.Kind)
	newest := ""
	for _, v := range spec.Versions {
		if v.Served && !v.Deprecated && utilversion.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 &&
			(newest == "" || utilversion.CompareKubeAwareVersionStrings(v.Name, newest) > 0) {
			newest = v.Name
		}
	}
	if newest == "" {
		return msg
	}
	return msg + fmt.Sprintf("; use %s/%s %s", spec.Group, newest, spec.Names.Kind)
}

// openAPIDocuments returns the OpenAPI documents of the served versions of
// crd, each built on first use: only /openapi and policy type checking
// read them.
func openAPIDocuments(crd *apiextensionsv1.CustomResourceDefinition, versions []string) (v3 func(string) (*spec3.OpenAPI, error), v2 func(string) (*spec.Swagger, error)) {
	return perVersion(crd, versions, openapi.CustomResourceV3), perVersion(crd, versions, openapi.CustomResourceV2)
}

// perVersion returns build(crd, version) for the served versions, each
// built once, on first use.
func perVersion[T any](crd *apiextensionsv1.CustomResourceDefinition, versions []string, build func(*apiextensionsv1.CustomResourceDefinition, string) (T, error)) func(string) (T, error) {
	built := map[string]func() (T, error){}
	for _, v := range versions {
		built[v] = sync.OnceValues(func() (T, error) { return build(crd, v) })
	}
	return func(v string) (T, error) {
		if get, ok := built[v]; ok {
			return get()
		}
		var zero T
		return zero, fmt.Errorf("%s serves no version %q", crd.Name, v)
	}
}

// scaleColumns are the columns of a /scale Table, as kube-apiserver
// prints a custom resource's Scale: its desired and actual replicas, where
// the scale subresource maps them, and its age.
func scaleColumns(sc *registry.Scale) []apiextensionsv1.CustomResourceColumnDefinition {
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	if sc.SpecReplicasPath != "" {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Desired", Type: "integer", Description: "Number of desired replicas", JSONPath: ".spec.replicas"})
	}
	if sc.StatusReplicasPath != "" {
		cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Available", Type: "integer", Description: "Number of actual replicas", JSONPath: ".status.replicas"})
	}
	return append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"})
}

// tableFrom adapts apiextensions-apiserver's table convertor of a version.
func tableFrom(tc interface {
	ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error)
}) registry.TableConvertor {
	empty, _ := tc.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	var columns []metav1.TableColumnDefinition
	if empty != nil {
		columns = empty.ColumnDefinitions
	}
	return registry.TableConvertor{
		Columns: columns,
		Cells: func(u *unstructured.Unstructured) []interface{} {
			t, err := tc.ConvertToTable(context.Background(), u, nil)
			if err != nil || len(t.Rows) == 0 {
				return []interface{}{u.GetName()}
			}
			return t.Rows[0].Cells
		},
	}
}

// Decode parses a body sent to version: duplicate fields, then the
// fields the version's schema does not know (both reported for
// fieldValidation; the unknown ones are pruned), object meta coercion and
// defaults, as kube-apiserver's decoder does for custom resources.
func (s *strategy) Decode(v string, body []byte) (*unstructured.Unstructured, []error, error) {
	return s.decode(v, body, true)
}

// DecodeApplied decodes the result of a server-side apply as Decode does
// a body, but keeps its explicit nulls: kube-apiserver's field manager
// hands the applied object to validation as it merged it, defaulted but
// not run through the decoder (a null where the schema allows none is
// then a 422, as under kube).
func (s *strategy) DecodeApplied(v string, body []byte) (*unstructured.Unstructured, []error, error) {
	return s.decode(v, body, false)
}

func (s *strategy) decode(v string, body []byte, dropNulls bool) (*unstructured.Unstructured, []error, error) {
	obj, strict, err := unstructuredjson.UnmarshalStrict(body)
	if err != nil {
		return nil, nil, err
	}
	if obj == nil {
		return nil, nil, fmt.Errorf("the body is not a JSON object")
	}
	ver, ok := s.versions[v]
	if !ok {
		return nil, nil, fmt.Errorf("version %q is not served", v)
	}
	if kind, _ := obj["kind"].(string); kind != s.gk.Kind {
		// Another kind: kube-apiserver's decoder neither prunes nor
		// coerces it, and its validation refuses the kind.
		return &unstructured.Unstructured{Object: obj}, strict, nil
	}
	unknown := structuralpruning.PruneWithOptions(obj, ver.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	// An explicit null where the schema allows none and has no default is
	// dropped, as kube-apiserver's decoder drops it (Helm renders empty
	// values so).
	if dropNulls {
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, ver.structural)
	}
	fieldErr, metaUnknown := schemaobjectmeta.CoerceWithOptions(nil, obj, ver.structural, true, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if fieldErr != nil && fieldErr.Field == "metadata" {
		// kube-apiserver reads the object's metadata before coercing the
		// rest: its error comes bare.
		return nil, nil, errors.New(fieldErr.Detail)
	}
	if fieldErr != nil {
		return nil, nil, fieldErr
	}
	// The unknown fields in the order kube-apiserver lists them: those of
	// the object's metadata, the pruned ones, those of embedded objects'
	// metadata. (Coercion drops the metadata ones.)
	var embedded []string
	for _, p := range metaUnknown {
		if strings.HasPrefix(p, "metadata.") {
			strict = append(strict, fmt.Errorf("unknown field %q", p))
		} else {
			embedded = append(embedded, p)
		}
	}
	for _, p := range append(unknown, embedded...) {
		strict = append(strict, fmt.Errorf("unknown field %q", p))
	}
	ver.applyDefaults(obj)
	return &unstructured.Unstructured{Object: obj}, strict, nil
}

// Default sets the defaults of obj's version's schema in obj.
func (s *strategy) Default(obj *unstructured.Unstructured) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != s.gk.Group {
		return
	}
	if ver, ok := s.versions[gv.Version]; ok {
		ver.applyDefaults(obj.Object)
	}
}

// applyDefaults sets the defaults of v's schema in obj.
func (v *version) applyDefaults(obj map[string]interface{}) {
	if v.hasDefaults {
		structuraldefaulting.Default(obj, v.structural)
	}
}

// hasNull tells whether a JSON value holds a null anywhere.
func hasNull(x interface{}) bool {
	switch x := x.(type) {
	case nil:
		return true
	case map[string]interface{}:
		for _, v := range x {
			if hasNull(v) {
				return true
			}
		}
	case []interface{}:
		for _, v := range x {
			if hasNull(v) {
				return true
			}
		}
	}
	return false
}

// hasEmbedded tells whether s or a schema under it is an embedded
// resource.
func hasEmbedded(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.XEmbeddedResource {
		return true
	}
	for _, p := range s.Properties {
		if hasEmbedded(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasEmbedded(s.AdditionalProperties.Structural) {
		return true
	}
	return hasEmbedded(s.Items)
}

// hasDefaults tells whether s or a schema under it sets a default.
func hasDefaults(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasDefaults(s.AdditionalProperties.Structural) {
		return true
	}
	return hasDefaults(s.Items)
}

// Convert converts obj, read from storage, to v as kube-apiserver's
// storage codec decodes a custom resource: defaulted by the schema of the
// version it was stored in first (a default added since it was written
// holds), then converted as ConvertForWrite converts it. v's defaults are
// not applied to what another version held.
func (s *strategy) Convert(obj *unstructured.Unstructured, v string) error {
	s.coerceStored(obj)
	s.Default(obj)
	return s.ConvertForWrite(obj, v)
}

// coerceStored coerces the metadata of the embedded objects of obj, read
// from storage, by the schema of its version, dropping their unknown and
// malformed fields, as kube-apiserver's storage decoder does: a field that
// became an embedded resource in a schema change may hold such metadata
// from before. (kapi validated the object's own metadata as it wrote it.)
func (s *strategy) coerceStored(obj *unstructured.Unstructured) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != s.gk.Group {
		return
	}
	if ver, ok := s.versions[gv.Version]; ok && ver.hasEmbedded {
		// With invalid fields dropped, the coercion fails only on what
		// it cannot drop, which it leaves as it is.
		schemaobjectmeta.CoerceWithOptions(nil, obj.Object, ver.structural, false, schemaobjectmeta.CoerceOptions{DropInvalidFields: true})
	}
}

// ConvertForWrite converts obj, being written, to v as kube-apiserver's
// storage codec encodes a custom resource: as ConvertInMemory, with no
// resourceVersion for the conversion webhook to see (kube's store sets it
// after the conversion of what it reads, and clears it before that of
// what it writes). It defaults nothing: what a strategy took from the
// stored object (a /status write's spec) keeps the defaults it was read
// with, not those of the version the write came through.
func (s *strategy) ConvertForWrite(obj *unstructured.Unstructured, v string) error {
	if rv := obj.GetResourceVersion(); rv != "" && s.webhookConversion {
		obj.SetResourceVersion("")
		defer func() { obj.SetResourceVersion(rv) }()
	}
	return s.ConvertInMemory(obj, v)
}

// ConvertInMemory converts obj to v as kube-apiserver's codecs convert a
// custom resource in memory (admission, the field manager): with the CRD's
// converter, then pruned by v's schema. It defaults nothing, as kube's
// converters do not: an object was defaulted as it was decoded.
func (s *strategy) ConvertInMemory(obj *unstructured.Unstructured, v string) error {
	gv := schema.GroupVersion{Group: s.gk.Group, Version: v}
	if obj.GetAPIVersion() != gv.String() {
		out, err := s.converter.ConvertToVersion(obj, gv)
		if err != nil {
			return err
		}
		u, ok := out.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("conversion returned %T", out)
		}
		obj.Object = u.Object
	}
	s.prune(obj, v)
	return nil
}

// ConvertForAdmission converts obj to v with the CRD's converter alone,
// as kube-apiserver's request scope converts a custom resource for
// admission (its safe converter): whatever kind obj has, neither defaulted
// nor pruned. A group or version the CRD does not serve is the converter's
// error.
func (s *strategy) ConvertForAdmission(obj *unstructured.Unstructured, v string) error {
	out, err := s.converter.ConvertToVersion(obj, schema.GroupVersion{Group: s.gk.Group, Version: v})
	if err != nil {
		return err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("conversion returned %T", out)
	}
	obj.Object = u.Object
	return nil
}

// CoerceForStorage prunes obj by its version's schema, drops the nulls
// the schema allows none of, and coerces its metadata and that of its
// embedded objects, as kube-apiserver's storage codec coerces a custom
// resource it writes (apiextensions' unstructuredSchemaCoercer, which does
// not drop malformed metadata): the object's metadata goes through
// ObjectMeta, so that a field it does not know is dropped and one it
// cannot hold fails the write with the JSON decoder's error.
func (s *strategy) CoerceForStorage(obj *unstructured.Unstructured) error {
	meta, found, err := schemaobjectmeta.GetObjectMeta(obj.Object, false)
	if err != nil {
		return err
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return err
	}
	if ver, ok := s.versions[gv.Version]; ok && gv.Group == s.gk.Group && obj.GetKind() == s.gk.Kind {
		structuralpruning.Prune(obj.Object, ver.structural, true)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, ver.structural)
		if fieldErr, _ := schemaobjectmeta.CoerceWithOptions(nil, obj.Object, ver.structural, false, schemaobjectmeta.CoerceOptions{}); fieldErr != nil {
			return fieldErr
		}
	}
	if found {
		return schemaobjectmeta.SetObjectMeta(obj.Object, meta)
	}
	return nil
}

// prune drops what v's schema does not know from obj, and its nulls where
// the schema allows none.
func (s *strategy) prune(obj *unstructured.Unstructured, v string) {
	if ver, ok := s.versions[v]; ok {
		structuralpruning.Prune(obj.Object, ver.structural, true)
		if hasNull(obj.Object) { // rare in what was stored: spare the walk's allocations
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, ver.structural)
		}
	}
}

// ConvertVersions converts the objects of objs not yet in version v
// through the CRD's conversion webhook in one ConversionReview (kube's
// webhook converter takes a list so; kube-apiserver itself converts each
// object as its version's storage decodes it, one per review, and keeps
// them converted in its watch cache: kapi, which has none, would call the
// webhook once per object of every list). Without a webhook, or for fewer
// than two, it converts none: Convert does them one by one.
func (s *strategy) ConvertVersions(objs []*unstructured.Unstructured, v string) ([]bool, error) {
	if !s.webhookConversion {
		return nil, nil
	}
	gv := schema.GroupVersion{Group: s.gk.Group, Version: v}
	converted := make([]bool, len(objs))
	var convert []*unstructured.Unstructured
	for i, obj := range objs {
		if obj.GetAPIVersion() != gv.String() {
			converted[i] = true
			convert = append(convert, obj)
		}
	}
	if len(convert) < 2 {
		return nil, nil // Convert does one alone
	}
	// The converter takes a list in the version it converts to; each
	// object is coerced and defaulted by its own version first, as
	// Convert does.
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": gv.String(), "kind": s.gk.Kind + "List"}}
	// The webhook sees no resourceVersion, as Convert's.
	list.Items = make([]unstructured.Unstructured, len(convert))
	rvs := make([]string, len(convert))
	for i, obj := range convert {
		s.coerceStored(obj)
		s.Default(obj)
		rvs[i] = obj.GetResourceVersion()
		obj.SetResourceVersion("")
		list.Items[i] = *obj
	}
	out, err := s.converter.ConvertToVersion(list, gv)
	result, ok := out.(*unstructured.UnstructuredList)
	if err == nil && (!ok || len(result.Items) != len(convert)) {
		err = fmt.Errorf("conversion of %d objects returned %T", len(convert), out)
	}
	for i, obj := range convert {
		if err == nil {
			obj.Object = result.Items[i].Object
			s.prune(obj, v)
		}
		obj.SetResourceVersion(rvs[i])
	}
	if err != nil {
		return nil, err
	}
	return converted, nil
}

// PrepareForCreate and PrepareForUpdate follow the rules of the version the
// write came through (whether status is its subresource's), as
// kube-apiserver's per-version strategies do.
func (s *strategy) PrepareForCreate(ctx context.Context, obj *unstructured.Unstructured) {
	s.requestVersion(ctx).kube.PrepareForCreate(ctx, obj)
}

func (s *strategy) PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured) {
	s.requestVersion(ctx).kube.PrepareForUpdate(ctx, obj, old)
}

// requestVersion is the version a request came through, or the storage
// version.
func (s *strategy) requestVersion(ctx context.Context) *version {
	if ver, ok := s.versions[registry.RequestVersion(ctx)]; ok {
		return ver
	}
	return s.versions[s.storageVersion]
}

// inRequestVersion returns the version a write came through and the
// objects in it, as kube-apiserver validates a custom resource by the
// schema of the version it was sent in. The handlers pass them in it; one
// in another version is converted (a copy).
func (s *strategy) inRequestVersion(ctx context.Context, objs ...*unstructured.Unstructured) (*version, []*unstructured.Unstructured, *field.Error) {
	v := registry.RequestVersion(ctx)
	ver, ok := s.versions[v]
	if !ok {
		v, ver = s.storageVersion, s.versions[s.storageVersion]
	}
	apiVersion := schema.GroupVersion{Group: s.gk.Group, Version: v}.String()
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		out[i] = obj
		if obj.GetAPIVersion() != apiVersion {
			out[i] = obj.DeepCopy()
			if err := s.Convert(out[i], v); err != nil {
				return nil, nil, field.InternalError(nil, err)
			}
		}
	}
	return ver, out, nil
}

func (s *strategy) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	ver, objs, err := s.inRequestVersion(ctx, obj)
	if err != nil {
		return field.ErrorList{err}
	}
	return ver.kube.Validate(ctx, objs[0])
}

func (s *strategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	ver, objs, err := s.inRequestVersion(ctx, obj, old)
	if err != nil {
		return field.ErrorList{err}
	}
	return ver.kube.ValidateUpdate(ctx, objs[0], objs[1])
}

// WarningsOnCreate and WarningsOnUpdate are kube-apiserver's warnings about
// a custom resource (finalizer names that are not domain-qualified).
func (s *strategy) WarningsOnCreate(ctx context.Context, obj *unstructured.Unstructured) []string {
	return s.requestVersion(ctx).kube.WarningsOnCreate(ctx, obj)
}

func (s *strategy) WarningsOnUpdate(ctx context.Context, obj, old *unstructured.Unstructured) []string {
	return s.requestVersion(ctx).kube.WarningsOnUpdate(ctx, obj, old)
}

// ResetFields returns the fields of version v that a write through
// subresource does not change, as apiextensions-apiserver's strategies
// declare them: status through the main resource and spec through /status,
// when v has a status subresource.
func (s *strategy) ResetFields(v, subresource string) *fieldpath.Set {
	ver, ok := s.versions[v]
	if !ok {
		return nil
	}
	var fields map[fieldpath.APIVersion]*fieldpath.Set
	switch {
	case subresource == "":
		fields = ver.kube.GetResetFields()
	case subresource == "status" && ver.kubeStatus != nil:
		fields = ver.kubeStatus.GetResetFields()
	}
	return fields[fieldpath.APIVersion(schema.GroupVersion{Group: s.gk.Group, Version: v}.String())]
}

func (s *strategy) AllowUnconditionalUpdate() bool { return false }

// TracksGeneration is true; the generation moves in PrepareForUpdate on any
// change outside metadata, as kube-apiserver does for custom resources.
func (s *strategy) TracksGeneration() bool { return true }

func (s *strategy) SpecChanged(ctx context.Context, obj, old *unstructured.Unstructured) bool {
	return false
}

func (s *strategy) PrepareForStatusUpdate(ctx context.Context, obj, old *unstructured.Unstructured) {
	ver := s.requestVersion(ctx)
	if ver.kubeStatus == nil {
		ver = s.versions[s.storageVersion]
	}
	if ver.kubeStatus != nil {
		ver.kubeStatus.PrepareForUpdate(ctx, obj, old)
	}
}

func (s *strategy) ValidateStatusUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	ver, objs, err := s.inRequestVersion(ctx, obj, old)
	if err != nil {
		return field.ErrorList{err}
	}
	if ver.kubeStatus == nil {
		ver = s.versions[s.storageVersion]
		objs = []*unstructured.Unstructured{obj, old}
	}
	return ver.kubeStatus.ValidateUpdate(ctx, objs[0], objs[1])
}
