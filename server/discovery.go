package server

import (
	"encoding/json"
	"net/http"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

// serveAPIVersions answers /api: the legacy core group's versions, or the
// aggregated discovery document of the core group.
func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	out, err := negotiate(r, "APIGroupDiscoveryList")
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
	out, err := negotiate(r, "APIGroupDiscoveryList")
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

func apiGroup(gv registry.GroupVersions) metav1.APIGroup {
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group}
	for _, v := range gv.Versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.Group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// serveAPIGroup answers /apis/<group>.
func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request, group string) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == group && group != "" {
			writeObject(w, r, out, http.StatusOK, apiGroup(gv))
			return
		}
	}
	writeError(w, r, notFoundPath(r))
}

// serveAPIResources answers /api/v1 and /apis/<group>/<version>.
func (s *Server) serveAPIResources(w http.ResponseWriter, r *http.Request, group, version string) {
	out, err := negotiate(r)
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
	for _, res := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:               res.Plural,
			SingularName:       res.Singular,
			Namespaced:         res.Namespaced,
			Kind:               res.Kind,
			Verbs:              res.Verbs(),
			ShortNames:         res.ShortNames,
			Categories:         res.Categories,
			StorageVersionHash: discovery.StorageVersionHash(group, res.StorageVersion, res.Kind),
		})
		if res.ScaleIn(version) != nil {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name:       res.Plural + "/scale",
				Namespaced: res.Namespaced,
				Group:      "autoscaling",
				Version:    "v1",
				Kind:       "Scale",
				Verbs:      []string{"get", "patch", "update"},
			})
		}
		if res.Finalize {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name:       res.Plural + "/finalize",
				Namespaced: res.Namespaced,
				Kind:       res.Kind,
				Verbs:      []string{"update"},
			})
		}
		if res.StatusIn(version) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name:       res.Plural + "/status",
				Namespaced: res.Namespaced,
				Kind:       res.Kind,
				Verbs:      []string{"get", "patch", "update"},
			})
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
				kind := &metav1.GroupVersionKind{Group: res.Group, Version: v, Kind: res.Kind}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource:         res.Plural,
					ResponseKind:     kind,
					Scope:            scope,
					SingularResource: res.Singular,
					Verbs:            res.Verbs(),
					ShortNames:       res.ShortNames,
					Categories:       res.Categories,
				}
				if res.ScaleIn(v) != nil {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
						Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
						Verbs: []string{"get", "patch", "update"},
					})
				}
				if res.Finalize {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
						Subresource: "finalize", ResponseKind: kind, Verbs: []string{"update"},
					})
				}
				if res.StatusIn(v) {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
						Subresource: "status", ResponseKind: kind, Verbs: []string{"get", "patch", "update"},
					})
				}
				vd.Resources = append(vd.Resources, rd)
			}
			g.Versions = append(g.Versions, vd)
		}
		list.Items = append(list.Items, g)
	}
	return list
}

// notFoundPath is kube-apiserver's answer to a path it does not serve.
func notFoundPath(r *http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "the server could not find the requested resource", 0, false)
}
