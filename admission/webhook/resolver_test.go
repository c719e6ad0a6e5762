package webhook

import (
	"strings"
	"testing"
)

func TestServiceResolver(t *testing.T) {
	r, err := ParseServiceResolver("webhooks/conv:443=127.0.0.1:9443, other/x:8443=localhost:1")
	if err != nil {
		t.Fatal(err)
	}
	u, err := r.ResolveEndpoint("webhooks", "conv", 443)
	if err != nil || u.String() != "https://127.0.0.1:9443" {
		t.Fatalf("resolve: %v %v", u, err)
	}
	if _, err := r.ResolveEndpoint("webhooks", "conv", 444); err == nil || !strings.Contains(err.Error(), "--service-resolver webhooks/conv:444=") {
		t.Fatalf("unknown port: %v", err)
	}
	for _, bad := range []string{"x", "ns/name=1.2.3.4:1", "name:443=1.2.3.4:1", "ns/name:0=1.2.3.4:1", "ns/name:443=nohostport"} {
		if _, err := ParseServiceResolver(bad); err == nil {
			t.Errorf("ParseServiceResolver(%q) accepted", bad)
		}
	}
}
