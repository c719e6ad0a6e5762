package server

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

// serveAPIVersions answers /api: the legacy core group's versions, or the
// aggregated discovery document of the core group.
func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	out, err := negotiateGeneric(r, "APIGroupDiscoveryList")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if out.as == "APIGroupDiscoveryList" {
		s.serveAggregatedDiscovery(w, r, out, true)
		return
	}
	writeObject(w, r, out, http.StatusOK, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
}

// serveAPIGroups answers /apis: every named group, or the aggregated
// discovery document of them all.
func (s *Server) serveAPIGroups(w http.ResponseWriter, r *http.Request) {
	out, err := negotiateGeneric(r, "APIGroupDiscoveryList")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if out.as == "APIGroupDiscoveryList" {
		s.serveAggregatedDiscovery(w, r, out, false)
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == "" {
			continue
		}
		list.Groups = append(list.Groups, apiGroup(gv))
	}
	writeObject(w, r, out, http.StatusOK, list)
}

// apiGroup is a group as /apis lists it (no kind of its own there; /apis/<group>
// gives it one).
func apiGroup(gv registry.GroupVersions) metav1.APIGroup {
	g := metav1.APIGroup{Name: gv.Group}
	for _, v := range gv.Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.Group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// serveAPIGroup answers /apis/<group>.
func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request, group string) {
	out, err := negotiateGeneric(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == group && group != "" {
			g := apiGroup(gv)
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			writeObject(w, r, out, http.StatusOK, &g)
			return
		}
	}
	writeError(w, r, notFoundPath(r))
}

// serveAPIResources answers /api/v1 and /apis/<group>/<version>.
func (s *Server) serveAPIResources(w http.ResponseWriter, r *http.Request, group, version string) {
	out, err := negotiateGeneric(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resources := s.reg.Resources(group, version)
	if len(resources) == 0 {
		writeError(w, r, notFoundPath(r))
		return
	}
	gv := schema.GroupVersion{Group: group, Version: version}.String()
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	if group == "" {
		// As kube-apiserver's: the core group's list carries no apiVersion.
		list.APIVersion = ""
	}
	for _, res := range resources {
		primary := metav1.APIResource{
			Name:         res.Plural,
			SingularName: res.Singular,
			Namespaced:   res.Namespaced,
			Kind:         res.Kind,
			Verbs:        res.Verbs(),
			ShortNames:   res.ShortNames,
			Categories:   res.Categories,
		}
		// A CRD's storage version has a hash only while it is served.
		if !res.Custom || res.Serves(res.StorageVersion) {
			primary.StorageVersionHash = discovery.StorageVersionHash(group, res.StorageVersion, res.Kind)
		}
		list.APIResources = append(list.APIResources, primary)
		for _, sub := range subresources(res, version) {
			sr := metav1.APIResource{Name: res.Plural + "/" + sub.name, Namespaced: res.Namespaced, Kind: res.Kind, Verbs: sub.verbs}
			if sub.name == "scale" {
				sr.Group, sr.Version, sr.Kind = "autoscaling", "v1", "Scale"
			}
			list.APIResources = append(list.APIResources, sr)
		}
	}
	writeObject(w, r, out, http.StatusOK, list)
}

// serveAggregatedDiscovery writes the aggregated discovery document of the
// core group (legacy) or of every named group as kube-apiserver does: with
// its hash as ETag, "Vary: Accept" and "Cache-Control: public", and 304 Not
// Modified to a request whose If-None-Match holds that ETag (kubectl's
// discovery cache revalidates so). The document is encoded once per
// generation of the registry.
func (s *Server) serveAggregatedDiscovery(w http.ResponseWriter, r *http.Request, out output, legacy bool) {
	doc, err := s.aggregatedDocument(out.version, legacy)
	if err != nil {
		writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	etag := `"` + doc.hash + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeObject(w, r, out, http.StatusOK, json.RawMessage(doc.data))
}

// discoveryKey names an aggregated discovery document: its
// apidiscovery.k8s.io version, and whether it is the core group's.
type discoveryKey struct {
	version string
	legacy  bool
}

func (s *Server) aggregatedDocument(version string, legacy bool) (document, error) {
	s.discoveryMu.Lock()
	defer s.discoveryMu.Unlock()
	key := discoveryKey{version, legacy}
	cached, ok := s.discoveryDocs[key]
	if !ok {
		cached = &byGeneration[document]{}
		s.discoveryDocs[key] = cached
	}
	doc, _, err := cached.get(s.reg.Generation(), func() (document, error) {
		data, err := unstructuredjson.Marshal(s.aggregatedDiscovery(version, legacy))
		if err != nil {
			return document{}, err
		}
		return newDocument(data), nil
	})
	return doc, err
}

// aggregatedDiscovery builds the apidiscovery.k8s.io document for the
// core group (legacy) or for every named group.
func (s *Server) aggregatedDiscovery(version string, legacy bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + version},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	for _, gv := range s.reg.GroupVersions() {
		if (gv.Group == "") != legacy {
			continue
		}
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}}
		for _, v := range gv.Versions {
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, res := range s.reg.Resources(gv.Group, v) {
				scope := apidiscoveryv2.ScopeCluster
				if res.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				// A custom resource's response kind names its group and
				// version; a built-in kind's, as kube-apiserver's, only the kind.
				kind := &metav1.GroupVersionKind{Kind: res.Kind}
				if res.Custom {
					kind.Group, kind.Version = res.Group, v
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource:         res.Plural,
					ResponseKind:     kind,
					Scope:            scope,
					SingularResource: res.Singular,
					Verbs:            res.Verbs(),
					ShortNames:       res.ShortNames,
					Categories:       res.Categories,
				}
				for _, sub := range subresources(res, v) {
					sd := apidiscoveryv2.APISubresourceDiscovery{Subresource: sub.name, ResponseKind: kind, Verbs: sub.verbs}
					if sub.name == "scale" {
						sd.ResponseKind = &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
					}
					rd.Subresources = append(rd.Subresources, sd)
				}
				vd.Resources = append(vd.Resources, rd)
			}
			g.Versions = append(g.Versions, vd)
		}
		list.Items = append(list.Items, g)
	}
	return list
}

// subresource is one subresource of a resource as discovery lists it.
type subresource struct {
	name  string
	verbs []string
}

// subresources are res's subresources in version, in kube-apiserver's
// order: finalize, status, scale.
func subresources(res *registry.Resource, version string) []subresource {
	var out []subresource
	if res.Finalize {
		out = append(out, subresource{"finalize", []string{"update"}})
	}
	if res.StatusIn(version) {
		out = append(out, subresource{"status", []string{"get", "patch", "update"}})
	}
	if res.ScaleIn(version) != nil {
		out = append(out, subresource{"scale", []string{"get", "patch", "update"}})
	}
	return out
}

// notFoundPath is kube-apiserver's answer to a path outside its built-in
// group versions: the request falls through its routers to Go's plain
// "404 page not found" (clients make a NotFound of their own of it, naming
// the resource they asked for).
func notFoundPath(*http.Request) error { return &pathNotFound{plain: true} }

// notFoundIn is the answer to a path under group/version that names no
// resource kapi serves there. Under a built-in group version it is the
// NotFound Status of kube-apiserver's router for it (go-restful's);
// under a custom resource's (kube's CRD handler passes the request on) or
// an unknown one, the plain 404 of notFoundPath.
func (s *Server) notFoundIn(group, version string) error {
	for _, res := range s.reg.Resources(group, version) {
		if !res.Custom {
			return &pathNotFound{}
		}
	}
	return &pathNotFound{plain: true}
}

// pathNotFound is a path kapi does not serve; writeError answers it as
// plain text or as a Status.
type pathNotFound struct{ plain bool }

func (e *pathNotFound) Error() string { return "the server could not find the requested resource" }

func (e *pathNotFound) Status() metav1.Status {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", e.Error(), 0, false).Status()
}

// listedPaths is a router that records the paths handed to its Handle, for
// the index.
type listedPaths struct {
	chi.Router
	paths []string
}

func (l *listedPaths) Handle(pattern string, h http.Handler) {
	l.paths = append(l.paths, pattern)
	l.Router.Handle(pattern, h)
}

// indexPaths are the paths the index lists besides the health checks' and
// the served groups': those kube-apiserver lists that kapi serves.
var indexPaths = []string{"/api", "/api/v1", "/apis", "/apis/", "/metrics", "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/version"}

// serveIndex answers / and /index.html as kube-apiserver does: the paths
// it serves, sorted (health checks given; every served group and group
// version, each of which kube-apiserver's aggregator lists).
func (s *Server) serveIndex(w http.ResponseWriter, health []string) {
	paths := sets.New(indexPaths...)
	paths.Insert(health...)
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == "" {
			continue
		}
		paths.Insert("/apis/" + gv.Group)
		for _, v := range gv.Versions {
			paths.Insert("/apis/" + gv.Group + "/" + v)
		}
	}
	responsewriters.WriteRawJSON(http.StatusOK, metav1.RootPaths{Paths: sets.List(paths)}, w)
}
