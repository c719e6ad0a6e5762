package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAdmitCreateInNamespace(t *testing.T) {
	phases := map[string]corev1.NamespacePhase{"live": corev1.NamespaceActive, "going": corev1.NamespaceTerminating}
	phase := func(_ context.Context, name string) (corev1.NamespacePhase, error) {
		p, ok := phases[name]
		if !ok {
			return "", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
		}
		return p, nil
	}
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	ctx := context.Background()
	if err := AdmitCreateInNamespace(ctx, phase, gr, "live", "w"); err != nil {
		t.Errorf("active namespace: %v", err)
	}
	if err := AdmitCreateInNamespace(ctx, phase, gr, "", "w"); err != nil {
		t.Errorf("cluster-scoped: %v", err)
	}
	err := AdmitCreateInNamespace(ctx, phase, gr, "missing", "w")
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "missing" not found` {
		t.Errorf("missing namespace: %v", err)
	}
	err = AdmitCreateInNamespace(ctx, phase, gr, "going", "w")
	status, ok := err.(apierrors.APIStatus)
	if !apierrors.IsForbidden(err) || !ok {
		t.Fatalf("terminating namespace: %v", err)
	}
	causes := status.Status().Details.Causes
	if len(causes) != 1 || causes[0].Type != corev1.NamespaceTerminatingCause || causes[0].Field != "metadata.namespace" {
		t.Errorf("causes = %+v", causes)
	}
	if want := `widgets.example.com "w" is forbidden: unable to create new content in namespace going because it is being terminated`; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}
