package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kapi-dev/kapi/admission"
	"github.com/kapi-dev/kapi/server/registry"
)

func versionInfo() *version.Info {
	return &version.Info{
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
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// serveHealth answers /healthz, /livez and /readyz (and a named check
// below them) as kube-apiserver does: "ok", or with ?verbose one line per
// check.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	checks := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"ping", func(context.Context) error { return nil }},
		{"database", func(ctx context.Context) error {
			_, err := s.store.CompactedRev(ctx)
			return err
		}},
		{"poststarthook/crd-controller", func(context.Context) error {
			if !s.started.Load() {
				return errors.New("not started")
			}
			return nil
		}},
		{"poststarthook/admission-caches", func(context.Context) error {
			if !s.started.Load() {
				return errors.New("not started")
			}
			return nil
		}},
	}
	only := chiParam(r, "*")
	// ?exclude=<check> (repeatable) skips a check, as kube-apiserver's.
	excluded := sets.New(r.URL.Query()["exclude"]...)
	var b strings.Builder
	failed := false
	found := only == ""
	for _, c := range checks {
		if only != "" && c.name != only {
			continue
		}
		found = true
		if only == "" && excluded.Has(c.name) {
			excluded.Delete(c.name)
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.fn(r.Context()); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
			s.log.Warn("health check failed", "check", c.name, "err", err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	if !found {
		writeError(w, r, notFoundPath(r))
		return
	}
	if only == "" && excluded.Len() > 0 {
		quoted := make([]string, 0, excluded.Len())
		for _, name := range sets.List(excluded) {
			quoted = append(quoted, strconv.Quote(name))
		}
		fmt.Fprintf(&b, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	path := strings.Trim(strings.Split(r.URL.Path, "/")[1], "/")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), path)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), path)
		return
	}
	fmt.Fprint(w, "ok")
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

func chiParam(r *http.Request, name string) string { return chi.URLParam(r, name) }
