package server

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A write made before Start has set up the policies waits for them; one
// whose context ends first is answered 503, not let through.
func TestValidateAdmissionBeforeStart(t *testing.T) {
	s, _ := newServer(t, memStore(t), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.validateAdmission(ctx, nil); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("validating before Start with an ended context: %v, want 503 ServiceUnavailable", err)
	}
}
