package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkObserveNamespace feeds new namespaces to started caches, one
// at a time as kapi's admission feed does: each waits until the cache
// holds it.
func BenchmarkObserveNamespace(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWebhooks(nil)
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i), ResourceVersion: fmt.Sprint(i + 1)},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		if err := w.Observe(ns, false); err != nil {
			b.Fatal(err)
		}
	}
}
