package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"

	"github.com/kapi-dev/kapi/server/registry"
	"github.com/kapi-dev/kapi/server/unstructuredjson"
)

// parseAccept returns the media types of an Accept header, best first, as
// kube-apiserver orders them (goautoneg: by quality, then concrete types
// before wildcards).
func parseAccept(header string) []goautoneg.Accept {
	if strings.TrimSpace(header) == "" {
		return []goautoneg.Accept{{Type: "*", SubType: "*", Q: 1}}
	}
	return goautoneg.ParseAccept(header)
}

// output is the negotiated shape of a response.
type output struct {
	yaml bool
	// protobuf: kube-apiserver's protobuf encoding.
	protobuf bool
	// builtin: the endpoint's objects are built-in kinds, whose JSON
	// follows their Go types' field order.
	builtin bool
	// pretty is asked for by the media type's pretty=1.
	pretty bool
	// raw is an error's form when none the client accepts can carry it:
	// indented JSON, as kube-apiserver's WriteRawJSON.
	raw bool
	// as is "Table", "PartialObjectMetadata", "PartialObjectMetadataList",
	// "APIGroupDiscoveryList" or "" for the object itself.
	as      string
	version string // of the meta.k8s.io or apidiscovery.k8s.io type
}

// negotiate picks the response form of a resource's endpoint from the
// Accept header. protobuf tells whether the endpoint's objects have a
// protobuf form (a built-in kind's; a custom resource's
// PartialObjectMetadata has one, the custom resource and its Scale not, as
// kube's scale handler keeps the custom resource's media types). allowAs lists
// the "as" transformations the endpoint offers. It fails with 406 when no
// acceptable form exists.
func negotiate(r *http.Request, protobuf bool, allowAs ...string) (output, error) {
	out, err := negotiateFor(r, metav1.SchemeGroupVersion.Version, protobuf, allowAs)
	out.builtin = protobuf // the kinds with a protobuf form are the built-in ones
	return out, err
}

// negotiateGeneric is negotiate for the endpoints that are not a
// resource's (discovery) and for errors, as kube-apiserver negotiates them
// with its default endpoint restrictions: a media type naming a server
// version (sv=) is not one of theirs. Their objects have a protobuf form.
func negotiateGeneric(r *http.Request, allowAs ...string) (output, error) {
	return negotiateFor(r, "", true, allowAs)
}

// negotiateFor is negotiate where a media type's server version (sv=) may
// be serverVersion only ("": none), as kube-apiserver's request scope
// allows meta.k8s.io's version alone.
func negotiateFor(r *http.Request, serverVersion string, protobuf bool, allowAs []string) (output, error) {
	for _, m := range parseAccept(r.Header.Get("Accept")) {
		isJSON := (m.Type == "application" && m.SubType == "json")
		isYAML := (m.Type == "application" && m.SubType == "yaml")
		isProtobuf := (m.Type == "application" && m.SubType == "vnd.kubernetes.protobuf")
		wild := (m.Type == "*" && m.SubType == "*") || (m.Type == "application" && m.SubType == "*")
		if !isJSON && !isYAML && !isProtobuf && !wild {
			continue
		}
		// As kube-apiserver's negotiation skips a media type whose
		// parameters the endpoint cannot honour: a stream form other than
		// watch, or of YAML (which has none); a server version not the
		// endpoint's.
		if stream := m.Params["stream"]; stream != "" && (stream != "watch" || isYAML) {
			continue
		}
		if sv := m.Params["sv"]; sv != "" && sv != serverVersion {
			continue
		}
		if m.Params["as"] == "" && (m.Params["g"] != "" || m.Params["v"] != "") {
			// A group or version with nothing to convert to: kube's
			// endpoints allow no such transformation.
			continue
		}
		if as := m.Params["as"]; as != "" {
			// In JSON or YAML, as kube-apiserver encodes a Table or a
			// PartialObjectMetadata(List); the PartialObjectMetadata(List)
			// of any resource and the aggregated discovery document in
			// protobuf too (its handler's restrictions allow it in every
			// media type its codecs have).
			if !allowed(as, allowAs) {
				continue
			}
			if isProtobuf && as == "Table" {
				continue
			}
			g, v := m.Params["g"], m.Params["v"]
			switch as {
			case "APIGroupDiscoveryList":
				// Only v2: kube-apiserver 1.33 no longer serves v2beta1
				// (AggregatedDiscoveryRemoveBetaType is on by default).
				if g != "apidiscovery.k8s.io" || v != "v2" {
					continue
				}
			default:
				if g != "meta.k8s.io" || (v != "v1" && v != "v1beta1") {
					continue
				}
			}
			return output{as: as, version: v, yaml: isYAML, protobuf: isProtobuf, pretty: m.Params["pretty"] == "1"}, nil
		}
		if isProtobuf && !protobuf {
			continue
		}
		return output{yaml: isYAML, protobuf: isProtobuf, pretty: m.Params["pretty"] == "1"}, nil
	}
	return output{}, notAcceptable()
}

func allowed(as string, list []string) bool {
	for _, a := range list {
		if a == as {
			return true
		}
	}
	return false
}

// pretty tells whether to indent JSON: ?pretty=true, or a human client as
// kube-apiserver guesses one from the User-Agent.
func pretty(r *http.Request) bool {
	if p := r.URL.Query().Get("pretty"); p != "" {
		b, _ := strconv.ParseBool(p)
		return b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// writeObject writes obj with code in the negotiated encoding.
func writeObject(w http.ResponseWriter, r *http.Request, out output, code int, obj any) {
	if status, ok := obj.(*metav1.Status); ok {
		// As kube-apiserver's response writer: the audit event records it.
		audit.LogResponseObject(r.Context(), status, schema.GroupVersion{}, nil)
	}
	var data []byte
	if raw, ok := obj.(json.RawMessage); ok {
		data = raw // encoded already (a list): spare a re-scan
	} else {
		var err error
		if data, err = unstructuredjson.Marshal(obj); err != nil {
			writeError(w, r, apierrors.NewInternalError(err))
			return
		}
	}
	if out.builtin && out.as == "" && !out.protobuf && !out.yaml {
		// A built-in kind's object or list, as its Go type encodes it
		// (a Status or another typed object is already).
		if _, typed := obj.(runtime.Object); !typed {
			var err error
			if data, err = builtinJSON(data); err != nil {
				writeError(w, r, apierrors.NewInternalError(err))
				return
			}
		}
	}
	contentType := "application/json"
	switch {
	case out.protobuf:
		var err error
		if data, err = protobufOf(obj, data); err != nil {
			writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		contentType = protobufMediaType
	case out.yaml:
		var err error
		if data, err = yaml.JSONToYAML(data); err != nil {
			writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		contentType = "application/yaml"
	case out.pretty || pretty(r) || out.raw:
		// Indented, and no newline after it, as kube-apiserver's encoder
		// writes pretty JSON (compact JSON ends with one).
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			data = buf.Bytes()
		} else {
			data = append(data, '\n')
		}
	default:
		data = append(data, '\n')
	}
	if out.as == "APIGroupDiscoveryList" {
		// As kube-apiserver's aggregated discovery: the media type names
		// the document's group, version and kind.
		contentType += ";g=apidiscovery.k8s.io;v=" + out.version + ";as=APIGroupDiscoveryList"
	}
	w.Header().Set("Content-Type", contentType)
	if len(data) > gzipThresholdBytes && acceptsGzip(r) && !loopbackClient(r) {
		// As kube-apiserver (APIResponseCompression, on by default): a
		// large response to a client that takes gzip (client-go's
		// transport asks for it) is compressed, at the fastest level;
		// unlike it, not to a client on this machine, for whom it would
		// only cost CPU on both ends (a LIST of 10,000 objects +15 %).
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		w.WriteHeader(code)
		gw := gzipWriters.Get().(*gzip.Writer)
		gw.Reset(w)
		gw.Write(data)
		gw.Close()
		gzipWriters.Put(gw)
		return
	}
	// The whole body is at hand: its length lets a client read a response
	// flushed early (a 504 at the deadline) as complete.
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}

// gzipThresholdBytes is the size past which kube-apiserver compresses a
// response.
const gzipThresholdBytes = 128 * 1024

var gzipWriters = sync.Pool{New: func() any {
	gw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gw
}}

// loopbackClient tells whether the request came over a loopback address.
func loopbackClient(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// acceptsGzip tells whether the request's Accept-Encoding names gzip, as
// kube-apiserver reads it: a comma-separated token that is exactly "gzip"
// (one with parameters, "gzip;q=0" say, is not taken).
func acceptsGzip(r *http.Request) bool {
	for _, token := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

// writeError writes err as a metav1.Status (a path not found as plain
// text where kube-apiserver answers it so).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if nf := (*pathNotFound)(nil); errors.As(err, &nf) && nf.plain {
		http.NotFound(w, r)
		return
	}
	status := toStatus(err)
	// As kube-apiserver: a Status that says when to retry says it in a
	// Retry-After header too (client-go retries on it), and is written in
	// YAML to a client that prefers it.
	if d := status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	out, err := negotiateGeneric(r)
	// An error no acceptable form can carry is written as kube-apiserver
	// writes it then: indented JSON.
	writeObject(w, r, output{yaml: out.yaml, protobuf: out.protobuf, raw: err != nil}, int(status.Code), status)
}

func toStatus(err error) *metav1.Status {
	var status metav1.Status
	if se, ok := err.(apierrors.APIStatus); ok {
		status = se.Status()
	} else if errors.Is(err, context.DeadlineExceeded) {
		// The request's deadline (--request-timeout, ?timeout=) passed.
		status = apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0).Status()
	} else {
		// Like kube-apiserver, an error that is not a Status (a failed
		// conversion webhook, say) is a 500 with its own message.
		status = metav1.Status{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	status.Kind = "Status"
	status.APIVersion = "v1"
	if status.Status == "" {
		status.Status = metav1.StatusFailure
	}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	return &status
}

// addWarning adds an RFC 7234 Warning header to the request's answer, as
// kube-apiserver sends them (once each, within its limits: see
// warningRecorder).
func addWarning(ctx context.Context, text string) {
	warning.AddWarning(ctx, "", text)
}

// notAcceptable is the 406 clients fall back from.
// notPartialMetadataShape is kube-apiserver's 406 for a
// PartialObjectMetadataList asked of one object, or a PartialObjectMetadata
// of a list: it accepts either media type anywhere, then finds the object
// of the other shape (named by its Go type in kube-apiserver: the internal
// kind's, unstructured for custom resources).
func notPartialMetadataShape(res *registry.Resource, list bool) error {
	goType := "*unstructured.Unstructured"
	if !res.Custom {
		pkg, _, _ := strings.Cut(res.Group, ".")
		if pkg == "" {
			pkg = "core"
		}
		goType = "*" + pkg + "." + res.Kind
	}
	message := fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%s)", goType)
	if list {
		message = fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%sList)", goType)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: message,
	}}
}

// notAcceptableStream is a watch's 406: kube-apiserver names the media
// types it can stream a watch in, each with ";stream=watch".
func notAcceptableStream() error {
	return notAcceptableOf("application/json;stream=watch, " + protobufMediaType + ";stream=watch")
}

// notAcceptable is the 406 of a request no acceptable form can answer:
// kube-apiserver names its media types (for custom resources too, whose
// PartialObjectMetadata have a protobuf form).
func notAcceptable() error {
	return notAcceptableOf("application/json, application/yaml, " + protobufMediaType)
}

// notAcceptableOf is kube-apiserver's 406 naming the media types accepted.
func notAcceptableOf(accepted string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + accepted,
	}}
}
