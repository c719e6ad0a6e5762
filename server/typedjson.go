package server

import (
	"bytes"

	"k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/kapi-dev/kapi/server/builtin"
)

// builtinJSONSerializer is kube-apiserver's JSON serializer over the Go
// types of the built-in kinds.
var builtinJSONSerializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, builtin.Scheme, builtin.Scheme, json.SerializerOptions{})

// builtinJSON re-encodes the JSON of a built-in kind's object or list as
// kube-apiserver encodes it: its Go type's fields, in their order (kapi's
// own encoder sorts the keys, as kube's does for custom resources, which
// have no Go type).
func builtinJSON(data []byte) ([]byte, error) {
	obj, _, err := builtinJSONSerializer.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := builtinJSONSerializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
