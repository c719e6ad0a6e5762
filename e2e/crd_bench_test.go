package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func benchCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
							"notes": {Type: "string"},
						}, XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size <= 100", Message: "too big"}}},
					},
				}},
			}},
		},
	}
}

var gvrWidgets = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "widgets"}

func widget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "bench.example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": name},
		// ~1 KiB of spec, as the project's benchmark prescribes.
		"spec": map[string]interface{}{"size": int64(3), "notes": fmt.Sprintf("%01000d", 7)},
	}}
	return u
}

// BenchmarkCRDEstablished: POST a CRD, then create its first custom
// resource as soon as the server takes it (retrying on 404).
func BenchmarkCRDEstablished(b *testing.B) {
	for i := 0; i < b.N; i++ {
		k := startKapi(b)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, benchCRD(), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			_, err := k.Dyn.Resource(gvrWidgets).Namespace("default").Create(ctx, widget("first"), metav1.CreateOptions{})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-crd-to-first-cr")
		cancel()
		k.Stop(b)
	}
}

// BenchmarkCreateThroughput: creates per second of a ~1 KiB custom
// resource (schema with a default and a CEL rule) and of a built-in kind
// (DeviceClass), with 1 and with 32 concurrent clients, against a durable
// file-backed kapi.
func BenchmarkCreateThroughput(b *testing.B) {
	const n = 2000
	for i := 0; i < b.N; i++ {
		k := startKapi(b)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, benchCRD(), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the CRD to be served", func() bool {
			_, err := k.Dyn.Resource(gvrWidgets).Namespace("default").List(ctx, metav1.ListOptions{})
			return err == nil
		})
		run := func(label string, clients int, create func(name string) error) {
			var wg sync.WaitGroup
			names := make(chan string, n)
			for j := 0; j < n; j++ {
				names <- fmt.Sprintf("%s-%d-%05d", label, clients, j)
			}
			close(names)
			start := time.Now()
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for name := range names {
						if err := create(name); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), fmt.Sprintf("%s-creates/s-%dclients", label, clients))
		}
		for _, clients := range []int{1, 32} {
			run("cr", clients, func(name string) error {
				_, err := k.Dyn.Resource(gvrWidgets).Namespace("default").Create(ctx, widget(name), metav1.CreateOptions{})
				return err
			})
			run("deviceclass", clients, func(name string) error {
				_, err := k.Client.ResourceV1beta2().DeviceClasses().Create(ctx, newDeviceClass(name), metav1.CreateOptions{})
				return err
			})
		}
		cancel()
		k.Stop(b)
	}
}
