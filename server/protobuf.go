package server

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kapi-dev/kapi/server/builtin"
	"github.com/kapi-dev/kapi/server/registry"
)

// protobufMediaType is kube-apiserver's protobuf encoding: the built-in
// kinds and their lists, Status and discovery's documents (the aggregated
// one too), and every resource's PartialObjectMetadata(List). Custom
// resources (their Scales too) have none.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufCodecs are the encoders and decoders of kapi's protobuf, over a
// scheme that knows the Go type of everything kapi reads or writes as
// protobuf. Built on first use: most clients never ask for protobuf, and
// the scheme holds a copy of every built-in kind's registration.
var protobufCodecs = sync.OnceValue(func() *protobufCodecSet {
	s := runtime.NewScheme()
	utilruntime.Must(builtin.AddToScheme(s))
	utilruntime.Must(apidiscoveryv2.AddToScheme(s))
	// A custom resource's Scale is read in protobuf (a PUT of /scale
	// takes the Scale codecs' media types), never written so (its answer
	// keeps the resource's: negotiate refuses protobuf for it).
	utilruntime.Must(autoscalingv1.AddToScheme(s))
	utilruntime.Must(metav1.AddMetaToScheme(s))
	utilruntime.Must(metav1beta1.AddMetaToScheme(s))
	return &protobufCodecSet{
		scheme:      s,
		codec:       protobuf.NewSerializer(s, s),
		watchEvents: protobuf.NewRawSerializer(s, s),
		jsonToTyped: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
	}
})

type protobufCodecSet struct {
	scheme *runtime.Scheme
	// codec encodes and decodes objects as kube-apiserver's protobuf media
	// type does (the "k8s\x00" prefix and the runtime.Unknown envelope
	// naming apiVersion and kind).
	codec *protobuf.Serializer
	// watchEvents encodes a watch's events, whose objects are enveloped
	// already, as the protobuf watch stream carries them: bare.
	watchEvents *protobuf.RawSerializer
	// jsonToTyped decodes JSON into the Go type its apiVersion and kind
	// name.
	jsonToTyped *json.Serializer
}

// protobufOf encodes a response as protobuf: obj itself when it is of the
// Go type the protobuf scheme has for the kind it names, else its JSON (data)
// decoded into that type (meta.k8s.io/v1beta1's PartialObjectMetadataList,
// say, is v1's in JSON, not in protobuf).
func protobufOf(obj any, data []byte) ([]byte, error) {
	codecs := protobufCodecs()
	typed, ok := obj.(runtime.Object)
	if ok {
		want, err := codecs.scheme.New(typed.GetObjectKind().GroupVersionKind())
		ok = err == nil && reflect.TypeOf(want) == reflect.TypeOf(typed)
	}
	if !ok {
		var err error
		if typed, _, err = codecs.jsonToTyped.Decode(data, nil, nil); err != nil {
			return nil, fmt.Errorf("no protobuf form: %w", err)
		}
	}
	var buf bytes.Buffer
	if err := codecs.codec.Encode(typed, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// protobufWatchEvent is one event of a protobuf watch stream (before its
// framing): a metav1.WatchEvent around the object's protobuf.
func protobufWatchEvent(typ string, object []byte) ([]byte, error) {
	var buf bytes.Buffer
	err := protobufCodecs().watchEvents.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}, &buf)
	return buf.Bytes(), err
}

// hasProtobuf tells whether a resource's objects have a protobuf form: the
// built-in kinds have, custom resources (and their Scales) have not.
func hasProtobuf(res *registry.Resource) bool {
	return !res.Custom
}
