package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/warning"
)

// Warnings are sent once each, within kube-apiserver's limits: past 4096
// runes in all, every warning (those already written too) is cut to 256
// runes, and once the cut ones fill the budget the rest are dropped.
func TestWarningLimits(t *testing.T) {
	w := httptest.NewRecorder()
	ctx := withWarnings(t.Context(), w)
	warning.AddWarning(ctx, "", "short")
	warning.AddWarning(ctx, "", "short")
	if got := w.Header().Values("Warning"); len(got) != 1 {
		t.Fatalf("a repeated warning: %d headers, want 1", len(got))
	}
	long := func(c string) string { return strings.Repeat(c, 1080) }
	for _, c := range []string{"a", "b", "c"} {
		warning.AddWarning(ctx, "", long(c))
	}
	if got := w.Header().Values("Warning"); len(got) != 4 || !strings.Contains(got[3], long("c")) {
		t.Fatalf("under the limit: %d headers, want 4 whole", len(got))
	}
	warning.AddWarning(ctx, "", long("d")) // 4,325 runes: past the limit
	got := w.Header().Values("Warning")
	if len(got) != 5 {
		t.Fatalf("past the limit: %d headers, want 5", len(got))
	}
	for _, h := range got[1:] {
		if n := strings.Count(h, h[len(`299 - "`):len(`299 - "`)+1]); n != 256 {
			t.Errorf("a cut warning holds %d runes of its text, want 256: %.40s...", n, h)
		}
	}
	// 5 + 4×256 = 1,029 runes: room for 12 more cut ones, then none.
	for i := 0; i < 20; i++ {
		warning.AddWarning(ctx, "", strings.Repeat(string(rune('e'+i)), 300))
	}
	if n := len(w.Header().Values("Warning")); n != 5+12 {
		t.Errorf("%d headers after the budget, want %d", n, 5+12)
	}
}

// A warning no header can carry (a control character) is dropped before it
// counts, as kube-apiserver drops it: a long one does not start the cutting
// of the others.
func TestWarningUnsendableDoesNotCut(t *testing.T) {
	w := httptest.NewRecorder()
	ctx := withWarnings(t.Context(), w)
	whole := strings.Repeat("a", 1000)
	warning.AddWarning(ctx, "", whole)
	warning.AddWarning(ctx, "", strings.Repeat("b", 4000)+"\x01")
	warning.AddWarning(ctx, "", "after")
	got := w.Header().Values("Warning")
	if len(got) != 2 || !strings.Contains(got[0], whole) || !strings.Contains(got[1], "after") {
		t.Errorf("headers %d, want the first whole and the last: %.80q", len(got), got)
	}
}
