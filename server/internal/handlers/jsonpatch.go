// Package handlers decodes what kube-apiserver's handlers package decodes
// into its own Go types, under the same package and type names, because
// kube's error messages name them: a JSON patch that is not a list of
// operations fails "json: cannot unmarshal object into Go value of type
// []handlers.jsonPatchOp".
package handlers

import (
	sigsjson "sigs.k8s.io/json"
)

// jsonPatchOp is what kube-apiserver strictly decodes a JSON patch's
// operations as (k8s.io/apiserver/pkg/endpoints/handlers).
type jsonPatchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	From  string      `json:"from"`
	Value interface{} `json:"value"`
}

// StrictJSONPatchErrors decodes patch strictly as a list of JSON patch
// operations, as kube-apiserver's patch handler does before it applies a
// JSON patch under fieldValidation Warn or Strict: it returns the strict
// errors (duplicate fields, unknown fields of an operation) and the error
// of a patch that does not decode.
func StrictJSONPatchErrors(patch []byte) ([]error, error) {
	var ops []jsonPatchOp
	return sigsjson.UnmarshalStrict(patch, &ops)
}
