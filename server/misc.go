package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/kapi-dev/kapi/admission"
	"github.com/kapi-dev/kapi/server/registry"
)

func versionInfo() *version.Info {
	info := &version.Info{
		Major: "1",
		Minor: "33",
		// As kube-apiserver 1.33 reports them: it emulates its own version
		// and is compatible back to the previous minor.
		EmulationMajor:        "1",
		EmulationMinor:        "33",
		MinCompatibilityMajor: "1",
		MinCompatibilityMinor: "32",
		// Build metadata, not a prerelease: semver ranks v1.33.0-kapi
		// below v1.33.0, and Helm charts' kubeVersion constraints
		// (">= 1.25.0") would refuse it.
		GitVersion:   KubernetesVersion + "+kapi",
		GitTreeState: "clean",
		// kube's value for a binary built without a date stamped in (a
		// client parsing it as a time gets one).
		BuildDate: "1970-01-01T00:00:00Z",
		GoVersion: runtime.Version(),
		Compiler:  runtime.Compiler,
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	return info
}

// healthChecks are kapi's checks for /healthz, /livez and /readyz, which
// kube-apiserver's healthz package serves ("ok", or with ?verbose one line
// per check; ?exclude=; one check at /<path>/<check>): kube's ping and log,
// the database, and the start-up of the controllers and caches.
func (s *Server) healthChecks() []healthz.HealthChecker {
	started := func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("not started")
		}
		return nil
	}
	return []healthz.HealthChecker{
		healthz.PingHealthz,
		healthz.LogHealthz,
		healthz.NamedCheck("database", func(r *http.Request) error {
			_, err := s.store.CompactedRev(r.Context())
			return err
		}),
		healthz.NamedCheck("poststarthook/crd-controller", started),
		healthz.NamedCheck("poststarthook/admission-caches", started),
	}
}

// admitNamespace runs the namespace lifecycle check of a create.
func (s *Server) admitNamespace(ctx context.Context, res *registry.Resource, namespace, name string) error {
	if !res.Namespaced {
		return nil
	}
	nsRes, _ := s.reg.Get("", "v1", "namespaces")
	return admission.AdmitCreateInNamespace(ctx, func(ctx context.Context, name string) (corev1.NamespacePhase, error) {
		// The admission caches answer for an active namespace, as kube's
		// plugin's informer does; the store for anything else.
		if s.webhooks.ActiveNamespace(name) {
			return corev1.NamespaceActive, nil
		}
		obj, _, err := s.getObject(ctx, nsRes, "", name)
		if err != nil {
			return "", err
		}
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return corev1.NamespacePhase(phase), nil
	}, res.GroupResource(), namespace, name)
}

func fieldErrorRVRequired() field.ErrorList {
	// kube-apiserver's store reports the parsed resourceVersion, 0.
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")}
}

// tooLargeResourceVersion is kube-apiserver's 504 for a read of a
// resourceVersion the store has not reached.
func tooLargeResourceVersion(want, current int64) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusGatewayTimeout,
		Reason:  metav1.StatusReasonTimeout,
		Message: fmt.Sprintf("Timeout: Too large resource version: %d, current: %d", want, current),
		Details: &metav1.StatusDetails{
			Causes:            []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}},
			RetryAfterSeconds: 1,
		},
	}}
}
