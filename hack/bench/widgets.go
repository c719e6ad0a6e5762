package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The custom resource every figure uses: namespaced Widgets of
// bench.kapi.dev with a structural schema and ~1 KiB of spec.
const (
	widgetGroup   = "bench.kapi.dev"
	sampleLabel   = "bench.kapi.dev/sample" // on 1% of the objects
	applyManager  = "kapi-bench-apply"
	widgetDataLen = 1000
)

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"size"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer", Minimum: ptr(0.0), Maximum: ptr(1000000.0)},
							"color": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
							"tags":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
							"data":  {Type: "string", MaxLength: ptr(int64(4096))},
						}},
					},
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// widgetData is the ~1,000 characters of spec.data.
var widgetData = strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", widgetDataLen/36+1)[:widgetDataLen]

// widgetJSON is a Widget's JSON: resourceVersion "" for a create, labels
// may be nil.
func widgetJSON(ns, name, resourceVersion string, size int, labels map[string]string) []byte {
	var meta strings.Builder
	fmt.Fprintf(&meta, `"name":%q,"namespace":%q`, name, ns)
	if resourceVersion != "" {
		fmt.Fprintf(&meta, `,"resourceVersion":%q`, resourceVersion)
	}
	if len(labels) > 0 {
		l, _ := json.Marshal(labels)
		fmt.Fprintf(&meta, `,"labels":%s`, l)
	}
	return fmt.Appendf(nil, `{"apiVersion":"%s/v1","kind":"Widget","metadata":{%s},"spec":{"size":%d,"color":"blue","tags":["bench","kapi","widget"],"data":%q}}`,
		widgetGroup, meta.String(), size, widgetData)
}

func widgetsPath(ns string) string {
	return fmt.Sprintf("/apis/%s/v1/namespaces/%s/widgets", widgetGroup, ns)
}

// The verbs, through client-go's REST client with bodies we encode: the
// responses are read whole but decoded only where a figure needs them.

func (k *kapiProc) createWidget(ctx context.Context, ns, name string, labels map[string]string) ([]byte, error) {
	return do(ctx, k.REST.Post().AbsPath(widgetsPath(ns)).Body(widgetJSON(ns, name, "", 1, labels)))
}

func (k *kapiProc) getWidget(ctx context.Context, ns, name string) ([]byte, error) {
	return do(ctx, k.REST.Get().AbsPath(widgetsPath(ns), name))
}

func (k *kapiProc) updateWidget(ctx context.Context, ns, name, resourceVersion string, size int, labels map[string]string) ([]byte, error) {
	return do(ctx, k.REST.Put().AbsPath(widgetsPath(ns), name).Body(widgetJSON(ns, name, resourceVersion, size, labels)))
}

func (k *kapiProc) mergePatchWidget(ctx context.Context, ns, name string, size int) ([]byte, error) {
	return do(ctx, k.REST.Patch(types.MergePatchType).AbsPath(widgetsPath(ns), name).
		Body(fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)))
}

func (k *kapiProc) applyWidget(ctx context.Context, ns, name string, size int) ([]byte, error) {
	body := fmt.Appendf(nil, `{"apiVersion":"%s/v1","kind":"Widget","metadata":{"name":%q,"namespace":%q},"spec":{"size":%d}}`,
		widgetGroup, name, ns, size)
	return do(ctx, k.REST.Patch(types.ApplyYAMLPatchType).AbsPath(widgetsPath(ns), name).
		Param("fieldManager", applyManager).Param("force", "true").Body(body))
}

func (k *kapiProc) deleteWidget(ctx context.Context, ns, name string) error {
	_, err := do(ctx, k.REST.Delete().AbsPath(widgetsPath(ns), name))
	return err
}

// do sends req and returns the response body, or the error with the
// server's Status in it.
func do(ctx context.Context, req *rest.Request) ([]byte, error) {
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// listWidgets is one LIST request; it returns the raw body.
func (k *kapiProc) listWidgets(ctx context.Context, ns string, limit int64, cont, selector string) ([]byte, error) {
	req := k.REST.Get().AbsPath(widgetsPath(ns))
	if limit > 0 {
		req = req.Param("limit", fmt.Sprint(limit))
	}
	if cont != "" {
		req = req.Param("continue", cont)
	}
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	return do(ctx, req)
}

// listPage is the part of a list response the benchmark checks.
type listPage struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// resourceVersionOf is metadata.resourceVersion of an object's JSON.
func resourceVersionOf(obj []byte) (string, error) {
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return "", err
	}
	if o.Metadata.ResourceVersion == "" {
		return "", fmt.Errorf("no resourceVersion in %.200s", obj)
	}
	return o.Metadata.ResourceVersion, nil
}

// installCRD posts the Widget CRD and returns once a Widget can be created
// (retrying every millisecond while kapi answers 404), with the time from
// the POST to that first Widget.
func installCRD(ctx context.Context, k *kapiProc, ns string) (time.Duration, error) {
	start := time.Now()
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create CRD: %w", err)
	}
	for {
		_, err := k.createWidget(ctx, ns, "first", nil)
		if err == nil {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("first widget: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
}
