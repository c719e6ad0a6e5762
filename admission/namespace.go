// Package admission is kapi's in-process admission chain. Today it holds
// the namespace lifecycle plugin; webhooks and policies come next.
package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NamespacePhase returns the phase of a namespace, or a NotFound error.
type NamespacePhase func(ctx context.Context, name string) (corev1.NamespacePhase, error)

// AdmitCreateInNamespace refuses, as kube-apiserver's NamespaceLifecycle
// plugin does, to create an object of resource gr in a namespace that does
// not exist (404) or is being terminated (403).
func AdmitCreateInNamespace(ctx context.Context, phase NamespacePhase, gr schema.GroupResource, namespace, name string) error {
	if namespace == "" {
		return nil
	}
	p, err := phase(ctx, namespace)
	if err != nil {
		return err
	}
	if p != corev1.NamespaceTerminating {
		return nil
	}
	e := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", namespace),
		Field:   "metadata.namespace",
	})
	return e
}

// immortalNamespaces may never be deleted, as kube-apiserver's
// NamespaceLifecycle plugin has it.
var immortalNamespaces = map[string]bool{metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true}

// AdmitNamespaceDelete refuses the deletion of an immortal namespace (403),
// as kube-apiserver's NamespaceLifecycle plugin does: first in its
// admission chain, so that no webhook hears of the request. gr is the
// request's resource.
func AdmitNamespaceDelete(gr schema.GroupResource, name string) error {
	if !immortalNamespaces[name] {
		return nil
	}
	return apierrors.NewForbidden(gr, name, errors.New("this namespace may not be deleted"))
}
