package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// encodeList writes exactly what json.Marshal writes for the list map, for
// lists small and large (encoded on several cores).
func TestEncodeListMatchesMarshal(t *testing.T) {
	remaining := int64(7)
	for _, n := range []int{0, 1, 63, 64, 1000} {
		items := make([]*unstructured.Unstructured, n)
		objs := make([]any, n)
		for i := range items {
			items[i] = &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprint("w-", i), "labels": map[string]any{"a": "<&>"}},
				"spec":     map[string]any{"n": int64(i), "f": 1.5, "list": []any{"x", true, nil}},
			}}
			objs[i] = items[i].Object
		}
		lm := metav1.ListMeta{ResourceVersion: "42", Continue: "tok", RemainingItemCount: &remaining}
		want, err := json.Marshal(map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": lm, "items": objs})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeList("example.com/v1", "WidgetList", lm, items)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%d items:\n got %.300s\nwant %.300s", n, got, want)
		}
	}
}

func TestOnEveryCore(t *testing.T) {
	for _, n := range []int{0, 5, 64, 1001} {
		var calls atomic.Int64
		seen := make([]atomic.Int32, n)
		if err := onEveryCore(n, func(i int) error { calls.Add(1); seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("n=%d: item %d ran %d times", n, i, seen[i].Load())
			}
		}
	}
	boom := errors.New("boom")
	if err := onEveryCore(500, func(i int) error {
		if i == 321 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
}
