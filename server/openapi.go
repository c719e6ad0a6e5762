package server

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kapi-dev/kapi/openapi"
	builtinopenapi "github.com/kapi-dev/kapi/openapi/builtin"
)

// document is an OpenAPI document as served: its JSON and the hash clients
// cache it by (ETag, the v3 index's ?hash=), computed once.
type document struct {
	data []byte
	hash string
}

func newDocument(data []byte) document { return document{data: data, hash: hashOf(data)} }

// gvDocument is the OpenAPI v3 document of one group version, what it was
// built from and when.
type gvDocument struct {
	document
	built time.Time
	from  gvSources
	proto *protoDocument
}

// protoDocument is a v3 document as protobuf, converted from its JSON on
// the first request for it.
type protoDocument struct {
	once sync.Once
	data []byte
	err  error
}

func (p *protoDocument) get(json []byte) ([]byte, error) {
	p.once.Do(func() { p.data, p.err = handler3.ToV3ProtoBinary(json) })
	return p.data, p.err
}

// gvSources are what a group version's document is built from: its
// built-in kinds, and the documents of its custom resource versions (each
// built once per CRD generation, so the same pointers while the CRD stays).
type gvSources struct {
	builtin []openapi.Kind
	custom  []*spec3.OpenAPI
}

func (a gvSources) equal(b gvSources) bool {
	return slices.Equal(a.builtin, b.builtin) && slices.Equal(a.custom, b.custom)
}

// gvDocuments returns the OpenAPI v3 document of every served group
// version, keyed by its path ("apis/<group>/<version>", "api/v1"), and
// those of the discovery and version services ("apis", "version"...), and when
// the set was last built. As kube-apiserver, a change of the served kinds
// builds again only the documents of the group versions it touched.
func (s *Server) gvDocuments() (map[string]gvDocument, time.Time, error) {
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	previous := s.openapiV3.value
	return s.openapiV3.get(s.reg.Generation(), func() (map[string]gvDocument, error) {
		return s.buildGVDocuments(previous)
	})
}

// v2Document returns the OpenAPI v2 document and when it was built.
func (s *Server) v2Document() (document, time.Time, error) {
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	return s.openapiV2.get(s.reg.Generation(), s.buildV2Document)
}

// v2ProtoDocument returns the OpenAPI v2 document as protobuf (what
// client-go's OpenAPISchema asks for) and when it was built.
func (s *Server) v2ProtoDocument() (document, time.Time, error) {
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	gen := s.reg.Generation() // the JSON and its protobuf of one generation
	return s.openapiV2Proto.get(gen, func() (document, error) {
		doc, _, err := s.openapiV2.get(gen, s.buildV2Document)
		if err != nil {
			return document{}, err
		}
		data, err := handler.ToProtoBinary(doc.data)
		if err != nil {
			return document{}, err
		}
		return newDocument(data), nil
	})
}

// serveDocument writes an OpenAPI document with its hash as ETag and the
// time it was built, as kube-apiserver does: a request whose If-None-Match
// or If-Modified-Since still holds gets 304 Not Modified.
func serveDocument(w http.ResponseWriter, r *http.Request, doc document, built time.Time) {
	serveDocumentAs(w, r, "application/json", doc, built)
}

func serveDocumentAs(w http.ResponseWriter, r *http.Request, contentType string, doc document, built time.Time) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", `"`+doc.hash+`"`)
	http.ServeContent(w, r, "", built, bytes.NewReader(doc.data))
}

// buildGVDocuments builds the v3 document of every served group version,
// reusing those of previous whose sources are the same.
func (s *Server) buildGVDocuments(previous map[string]gvDocument) (map[string]gvDocument, error) {
	sources := map[string]gvSources{}
	for _, res := range s.reg.All() {
		if res.Unestablished {
			// Not published until its CRD is Established, as by
			// kube-apiserver's OpenAPI controllers.
			continue
		}
		for _, v := range res.Versions {
			p := openapi.GroupVersionPath(res.Group, v)
			src := sources[p]
			if res.OpenAPIV3 != nil {
				doc, err := res.OpenAPIV3(v)
				if err != nil {
					return nil, err
				}
				src.custom = append(src.custom, doc)
			} else {
				src.builtin = append(src.builtin, openapi.Kind{Group: res.Group, Version: v, Kind: res.Kind, Plural: res.Plural, Namespaced: res.Namespaced, Status: res.Status})
			}
			sources[p] = src
		}
	}
	out := make(map[string]gvDocument, len(sources))
	for p, src := range sources {
		if old, ok := previous[p]; ok && old.from.equal(src) {
			out[p] = old
			continue
		}
		doc, err := buildGVDocument(p, src)
		if err != nil {
			return nil, err
		}
		out[p] = gvDocument{document: doc, built: time.Now(), from: src, proto: &protoDocument{}}
	}
	// Beside them, as kube-apiserver: the documents of the discovery and
	// version services (generated, as the built-in kinds').
	for _, p := range builtinopenapi.DiscoveryV3Paths() {
		if old, ok := previous[p]; ok {
			out[p] = old
			continue
		}
		data, _ := builtinopenapi.V3Document(p)
		out[p] = gvDocument{document: newDocument(data), built: time.Now(), proto: &protoDocument{}}
	}
	return out, nil
}

// buildGVDocument builds a group version's document: that of its built-in
// kinds (generated as kube-apiserver builds it) merged with its custom
// resources' documents (a CRD may serve a kind in a built-in group
// version).
func buildGVDocument(path string, src gvSources) (document, error) {
	var docs []*spec3.OpenAPI
	if len(src.builtin) > 0 {
		data, ok := builtinopenapi.V3Document(path)
		if !ok {
			return document{}, fmt.Errorf("openapi: no document for the built-in group version %s", path)
		}
		if len(src.custom) == 0 {
			return newDocument(data), nil
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(data, &doc); err != nil {
			return document{}, err
		}
		docs = append(docs, &doc)
	}
	merged, err := builder.MergeSpecsV3(append(docs, src.custom...)...)
	if err != nil {
		return document{}, err
	}
	return marshalDocument(merged)
}

func marshalDocument(doc any) (document, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return document{}, err
	}
	return newDocument(data), nil
}

func hashOf(data []byte) string { return fmt.Sprintf("%X", sha512.Sum512(data)) }

// serveOpenAPIV3Root answers /openapi/v3: the paths of every group version
// with the hash clients cache them by. As kube-apiserver's aggregator
// serves it (its OpenAPI v3 spec proxier's discovery handler): with no
// ETag and the time of the request as Last-Modified, through
// http.ServeContent, which names the JSON text/plain as it sniffs it; the
// documents it points to carry the hashes and ETags.
func (s *Server) serveOpenAPIV3Root(w http.ResponseWriter, r *http.Request) {
	docs, _, err := s.gvDocuments()
	if err != nil {
		writeError(w, r, err)
		return
	}
	root := handler3.OpenAPIV3Discovery{Paths: make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(docs))}
	for p, doc := range docs {
		root.Paths[p] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: "/openapi/v3/" + p + "?hash=" + doc.hash}
	}
	data, err := json.Marshal(&root)
	if err != nil {
		writeError(w, r, err)
		return
	}
	http.ServeContent(w, r, "/openapi/v3", time.Now(), bytes.NewReader(data))
}

// The media types of the OpenAPI documents, as kube-openapi names them:
// JSON, and protobuf (the older name, with '@', is accepted too).
const (
	openAPIJSON          = "json"
	openAPIV2ProtobufOld = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	openAPIV2Protobuf    = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	openAPIV3ProtobufOld = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	openAPIV3Protobuf    = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// negotiateOpenAPI picks, as kube-openapi's handlers do, the first of
// subTypes (all of type application) that the request's Accept clauses
// allow, in the clauses' order; ok is false when none is acceptable.
func negotiateOpenAPI(r *http.Request, subTypes ...string) (subType string, ok bool) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, st := range subTypes {
			if (clause.Type == "application" || clause.Type == "*") && (clause.SubType == st || clause.SubType == "*") {
				return st, true
			}
		}
	}
	return "", false
}

// openAPINotAcceptable answers a request for an OpenAPI document in a
// media type it is not served in: a bare 406, as kube-openapi's handlers.
func openAPINotAcceptable(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotAcceptable)
}

// serveOpenAPIV3 answers /openapi/v3/<api|apis/group>/<version>, as JSON
// or protobuf by the first acceptable media type, as kube-apiserver.
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	want := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3/"), "/")
	docs, _, err := s.gvDocuments()
	if err != nil {
		writeError(w, r, err)
		return
	}
	doc, ok := docs[want]
	if !ok {
		// As kube-apiserver's aggregator answers a group version no
		// API service lists: a bare 404, no body.
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Add("Vary", "Accept")
	subType, ok := negotiateOpenAPI(r, openAPIJSON, openAPIV3Protobuf, openAPIV3ProtobufOld)
	if !ok {
		openAPINotAcceptable(w)
		return
	}
	// As kube-openapi's handler: a hashed URL is cached for good, and one
	// whose hash is stale redirects to the current one. Both forms carry
	// the hash of the JSON.
	switch hash := r.URL.Query().Get("hash"); {
	case hash == "": // no-cache, private, as every answer
	case hash != doc.hash:
		http.Redirect(w, r, "/openapi/v3/"+want+"?hash="+doc.hash, http.StatusMovedPermanently)
		return
	default:
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
	}
	if subType == openAPIJSON {
		serveDocument(w, r, doc.document, doc.built)
		return
	}
	data, err := doc.proto.get(doc.data)
	if err != nil {
		writeError(w, r, err)
		return
	}
	serveDocumentAs(w, r, "application/"+openAPIV3Protobuf, document{data: data, hash: doc.hash}, doc.built)
}

// serveOpenAPIV2 answers /openapi/v2: the operations of the built-in kinds
// and the documents of every served custom resource version, as JSON or
// protobuf by the first acceptable media type, as kube-apiserver.
func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	subType, ok := negotiateOpenAPI(r, openAPIJSON, openAPIV2Protobuf, openAPIV2ProtobufOld)
	if !ok {
		openAPINotAcceptable(w)
		return
	}
	doc, built, err := s.v2Document()
	contentType := "application/json"
	if subType != openAPIJSON {
		doc, built, err = s.v2ProtoDocument()
		contentType = "application/" + openAPIV2Protobuf
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	serveDocumentAs(w, r, contentType, doc, built)
}

// buildV2Document builds the /openapi/v2 document: the built-in kinds'
// (generated as kube-apiserver builds it) merged with the documents of
// every served custom resource version.
func (s *Server) buildV2Document() (document, error) {
	var custom []*spec.Swagger
	for _, res := range s.reg.All() {
		if res.OpenAPIV2 == nil || res.Unestablished {
			continue
		}
		for _, v := range res.Versions {
			doc, err := res.OpenAPIV2(v)
			if err != nil {
				return document{}, err
			}
			custom = append(custom, doc)
		}
	}
	static := &spec.Swagger{}
	if err := json.Unmarshal(builtinopenapi.V2Document(), static); err != nil {
		return document{}, err
	}
	merged, err := builder.MergeSpecs(static, custom...)
	if err != nil {
		return document{}, err
	}
	return marshalDocument(merged)
}
