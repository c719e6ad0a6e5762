// Command openapigen writes the OpenAPI documents of kapi's built-in kinds
// as kube-apiserver builds them: the kinds' REST paths are installed by
// kube-apiserver's own installer (k8s.io/apiserver/pkg/endpoints) over
// storage that only declares its verbs, and the documents are built from
// those routes by kube-openapi's builders with the generated definitions,
// so every operation has kube's operationId, parameters, request body,
// responses and extensions. `make generate` runs it; kapi embeds the
// output (openapi/builtin/docs) and merges its custom resources' documents
// into it at run time.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	endpointsopenapi "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/kapi-dev/kapi/openapi/builtin"
	kapibuiltin "github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapigen OUTPUT-DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	scheme := kapibuiltin.Scheme
	codecs := serializer.NewCodecFactory(scheme)
	reg := registry.New()
	kapibuiltin.Register(reg)

	// The built-in resources of each group version, as kapi serves them.
	storage := map[schema.GroupVersion]map[string]rest.Storage{}
	for _, res := range reg.All() {
		if res.Custom {
			continue
		}
		for _, v := range res.Versions {
			gv := schema.GroupVersion{Group: res.Group, Version: v}
			newObj := func(kind string) func() runtime.Object {
				return func() runtime.Object {
					obj, err := scheme.New(gv.WithKind(kind))
					if err != nil {
						panic(fmt.Sprintf("%s: %v", gv.WithKind(kind), err))
					}
					return obj
				}
			}
			if storage[gv] == nil {
				storage[gv] = map[string]rest.Storage{}
			}
			s := &resourceStorage{newObj: newObj(res.Kind), newList: newObj(res.ListKind), namespaced: res.Namespaced, singular: res.Singular}
			if res.NoDeleteCollection {
				storage[gv][res.Plural] = s
			} else {
				storage[gv][res.Plural] = &collectionStorage{s}
			}
			if res.StatusIn(v) {
				storage[gv][res.Plural+"/status"] = &statusStorage{newObj: newObj(res.Kind)}
			}
			if res.Finalize {
				storage[gv][res.Plural+"/finalize"] = &finalizeStorage{newObj: newObj(res.Kind)}
			}
		}
	}

	container := restful.NewContainer()
	var gvs []schema.GroupVersion
	for gv := range storage {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	for _, gv := range gvs {
		root := "/apis"
		if gv.Group == "" {
			root = "/api"
		}
		group := &endpoints.APIGroupVersion{
			Storage:                    storage[gv],
			Root:                       root,
			GroupVersion:               gv,
			Serializer:                 codecs,
			ParameterCodec:             runtime.NewParameterCodec(scheme),
			Typer:                      scheme,
			Creater:                    scheme,
			Convertor:                  scheme,
			ConvertabilityChecker:      scheme,
			Defaulter:                  scheme,
			UnsafeConvertor:            runtime.UnsafeObjectConvertor(scheme),
			Namer:                      meta.NewAccessor(),
			TypeConverter:              managedfields.NewDeducedTypeConverter(),
			EquivalentResourceRegistry: runtime.NewEquivalentResourceRegistry(),
		}
		if _, _, err := group.InstallREST(container); err != nil {
			return fmt.Errorf("installing %s: %w", gv, err)
		}
	}

	// The discovery and version services kube-apiserver registers beside
	// the resources (its OpenAPI documents describe them too): /api,
	// /apis, /apis/<group> for each built-in group, /version.
	discoveryCodecs := aggregated.WrapAggregatedDiscoveryToHandler(nil, nil)
	container.Add(discoveryCodecs.GenerateWebService("/api", metav1.APIVersions{}))
	container.Add(discoveryCodecs.GenerateWebService("/apis", metav1.APIGroupList{}))
	groups := map[string]bool{}
	for _, gv := range gvs {
		if gv.Group != "" && !groups[gv.Group] {
			groups[gv.Group] = true
			container.Add(discovery.NewAPIGroupHandler(codecs, metav1.APIGroup{Name: gv.Group}).WebService())
		}
	}
	routes.Version{Version: &version.Info{}}.Install(container)

	definitions := func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := builtin.GetOpenAPIDefinitions(ref)
		for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
			defs[name] = def
		}
		return defs
	}
	namer := endpointsopenapi.NewDefinitionNamer(scheme)

	// OpenAPI v3: one document per group version, as kube-apiserver
	// serves them (/openapi/v3/apis/<group>/<version>).
	v3 := genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	v3.Info.Title = "Kubernetes"
	v3.Info.Version = "v1.33.0"
	for _, ws := range container.RegisteredWebServices() {
		doc, err := builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), v3)
		if err != nil {
			return fmt.Errorf("v3 %s: %w", ws.RootPath(), err)
		}
		name := strings.ReplaceAll(strings.TrimPrefix(ws.RootPath(), "/"), "/", "__") + ".json"
		if err := writeJSON(filepath.Join(dir, "v3", name), doc); err != nil {
			return err
		}
	}

	// OpenAPI v2: one document of everything.
	v2 := genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	v2.Info.Title = "Kubernetes"
	v2.Info.Version = "v1.33.0"
	doc, err := builder.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(container.RegisteredWebServices()), v2)
	if err != nil {
		return fmt.Errorf("v2: %w", err)
	}
	// As kube-apiserver publishes v2: without defaults.
	doc.Definitions = handler.PruneDefaults(doc.Definitions)
	return writeJSON(filepath.Join(dir, "v2.json"), doc)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// resourceStorage declares the verbs of a resource to kube's installer
// (get, list, watch, create, update, patch, delete); it stores nothing.
type resourceStorage struct {
	newObj, newList func() runtime.Object
	namespaced      bool
	singular        string
}

func (s *resourceStorage) New() runtime.Object     { return s.newObj() }
func (s *resourceStorage) NewList() runtime.Object { return s.newList() }
func (s *resourceStorage) Destroy()                {}
func (s *resourceStorage) NamespaceScoped() bool   { return s.namespaced }
func (s *resourceStorage) GetSingularName() string { return s.singular }
func (s *resourceStorage) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return nil, errNotServed
}
func (s *resourceStorage) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errNotServed
}
func (s *resourceStorage) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errNotServed
}
func (s *resourceStorage) Watch(context.Context, *metainternalversion.ListOptions) (watch.Interface, error) {
	return nil, errNotServed
}
func (s *resourceStorage) Create(context.Context, runtime.Object, rest.ValidateObjectFunc, *metav1.CreateOptions) (runtime.Object, error) {
	return nil, errNotServed
}
func (s *resourceStorage) Update(context.Context, string, rest.UpdatedObjectInfo, rest.ValidateObjectFunc, rest.ValidateObjectUpdateFunc, bool, *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, errNotServed
}
func (s *resourceStorage) Delete(context.Context, string, rest.ValidateObjectFunc, *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return nil, false, errNotServed
}

// collectionStorage adds deletecollection.
type collectionStorage struct{ *resourceStorage }

func (s *collectionStorage) DeleteCollection(context.Context, rest.ValidateObjectFunc, *metav1.DeleteOptions, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errNotServed
}

// statusStorage is a /status subresource: get, update, patch.
type statusStorage struct{ newObj func() runtime.Object }

func (s *statusStorage) New() runtime.Object { return s.newObj() }
func (s *statusStorage) Destroy()            {}
func (s *statusStorage) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return nil, errNotServed
}
func (s *statusStorage) Update(context.Context, string, rest.UpdatedObjectInfo, rest.ValidateObjectFunc, rest.ValidateObjectUpdateFunc, bool, *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, errNotServed
}

// finalizeStorage is a namespace's /finalize: update only.
type finalizeStorage struct{ newObj func() runtime.Object }

func (s *finalizeStorage) New() runtime.Object { return s.newObj() }
func (s *finalizeStorage) Destroy()            {}
func (s *finalizeStorage) Update(context.Context, string, rest.UpdatedObjectInfo, rest.ValidateObjectFunc, rest.ValidateObjectUpdateFunc, bool, *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, errNotServed
}

var errNotServed = fmt.Errorf("openapigen's storage serves nothing")
