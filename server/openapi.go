package server

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kapi-dev/kapi/openapi"
)

// gvDocuments returns the OpenAPI v3 document of every served group
// version, keyed by its path ("apis/<group>/<version>", "api/v1"), as JSON.
// They are built again only when the registry changes.
func (s *Server) gvDocuments() (map[string][]byte, error) {
	gen := s.reg.Generation()
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	if s.openapiDocs != nil && s.openapiGen == gen {
		return s.openapiDocs, nil
	}
	docs, err := s.buildGVDocuments()
	if err != nil {
		return nil, err
	}
	s.openapiDocs, s.openapiGen = docs, gen
	return docs, nil
}

func (s *Server) buildGVDocuments() (map[string][]byte, error) {
	builtin := map[string][]openapi.Kind{}
	custom := map[string][]*spec3.OpenAPI{}
	for _, res := range s.reg.All() {
		for _, v := range res.Versions {
			p := openapi.GroupVersionPath(res.Group, v)
			if res.OpenAPIV3 != nil {
				doc, err := res.OpenAPIV3(v)
				if err != nil {
					return nil, err
				}
				custom[p] = append(custom[p], doc)
				continue
			}
			builtin[p] = append(builtin[p], openapi.Kind{Group: res.Group, Version: v, Kind: res.Kind, Plural: res.Plural, Namespaced: res.Namespaced, Status: res.Status})
		}
	}
	out := map[string][]byte{}
	for p, kinds := range builtin {
		data, err := json.Marshal(openapi.V3(kinds[0].Group, kinds[0].Version, kinds))
		if err != nil {
			return nil, err
		}
		out[p] = data
	}
	for p, docs := range custom {
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		out[p] = data
	}
	return out, nil
}

func hashOf(data []byte) string { return fmt.Sprintf("%X", sha512.Sum512(data)) }

// serveOpenAPIV3Root answers /openapi/v3: the paths of every group version
// with the hash clients cache them by.
func (s *Server) serveOpenAPIV3Root(w http.ResponseWriter, r *http.Request) {
	docs, err := s.gvDocuments()
	if err != nil {
		writeError(w, r, err)
		return
	}
	paths := map[string]any{}
	for p, data := range docs {
		paths[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + hashOf(data)}
	}
	writeObject(w, r, output{}, http.StatusOK, map[string]any{"paths": paths})
}

// serveOpenAPIV3 answers /openapi/v3/<api|apis/group>/<version>.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	want := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3/"), "/")
	docs, err := s.gvDocuments()
	if err != nil {
		writeError(w, r, err)
		return
	}
	data, ok := docs[want]
	if !ok {
		writeError(w, r, notFoundPath(r))
		return
	}
	hash := hashOf(data)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hash+`"`)
	if r.URL.Query().Get("hash") == hash {
		w.Header().Set("Cache-Control", "public, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache, no-store, must-revalidate")
	}
	w.Write(data)
}

// serveOpenAPIV2 answers /openapi/v2: the operations of the built-in kinds
// and the documents of every served custom resource version.
func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if accept != "" && !strings.Contains(accept, "json") && !strings.Contains(accept, "*/*") {
		writeError(w, r, notAcceptable())
		return
	}
	var kinds []openapi.Kind
	var custom []*spec.Swagger
	for _, res := range s.reg.All() {
		for _, v := range res.Versions {
			if res.OpenAPIV2 != nil {
				doc, err := res.OpenAPIV2(v)
				if err != nil {
					writeError(w, r, err)
					return
				}
				custom = append(custom, doc)
				continue
			}
			kinds = append(kinds, openapi.Kind{Group: res.Group, Version: v, Kind: res.Kind, Plural: res.Plural, Namespaced: res.Namespaced, Status: res.Status})
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].Group+kinds[i].Plural < kinds[j].Group+kinds[j].Plural })
	static := &spec.Swagger{}
	raw, _ := json.Marshal(openapi.V2(kinds))
	if err := json.Unmarshal(raw, static); err != nil {
		writeError(w, r, err)
		return
	}
	merged, err := builder.MergeSpecs(static, custom...)
	if err != nil {
		writeError(w, r, err)
		return
	}
	data, err := json.Marshal(merged)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hashOf(data)+`"`)
	w.Write(data)
}
