package server

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kapi-dev/kapi/openapi"
)

func (s *Server) openAPIKinds() []openapi.Kind {
	var out []openapi.Kind
	for _, res := range s.reg.All() {
		for _, v := range res.Versions {
			out = append(out, openapi.Kind{Group: res.Group, Version: v, Kind: res.Kind, Plural: res.Plural, Namespaced: res.Namespaced, Status: res.Status})
		}
	}
	return out
}

func hashOf(doc any) (string, []byte) {
	data, _ := json.Marshal(doc)
	return fmt.Sprintf("%X", sha512.Sum512(data)), data
}

// serveOpenAPIV3Root answers /openapi/v3: the paths of every group version
// with the hash clients cache them by.
func (s *Server) serveOpenAPIV3Root(w http.ResponseWriter, r *http.Request) {
	byGV := map[string][]openapi.Kind{}
	for _, k := range s.openAPIKinds() {
		p := openapi.GroupVersionPath(k.Group, k.Version)
		byGV[p] = append(byGV[p], k)
	}
	paths := map[string]any{}
	for p, kinds := range byGV {
		hash, _ := hashOf(openapi.V3(kinds[0].Group, kinds[0].Version, kinds))
		paths[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + hash}
	}
	writeObject(w, r, output{}, http.StatusOK, map[string]any{"paths": paths})
}

// serveOpenAPIV3 answers /openapi/v3/<api|apis/group>/<version>.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	want := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3/"), "/")
	var kinds []openapi.Kind
	for _, k := range s.openAPIKinds() {
		if openapi.GroupVersionPath(k.Group, k.Version) == want {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		writeError(w, r, notFoundPath(r))
		return
	}
	hash, data := hashOf(openapi.V3(kinds[0].Group, kinds[0].Version, kinds))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hash+`"`)
	if r.URL.Query().Get("hash") == hash {
		w.Header().Set("Cache-Control", "public, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache, no-store, must-revalidate")
	}
	w.Write(data)
}

func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if accept != "" && !strings.Contains(accept, "json") && !strings.Contains(accept, "*/*") {
		writeError(w, r, notAcceptable())
		return
	}
	hash, data := hashOf(openapi.V2(s.openAPIKinds()))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hash+`"`)
	w.Write(data)
}
