// Package webhook holds what kapi's calls to webhooks share: admission
// webhooks and CRD conversion webhooks resolve a clientConfig.service
// reference by the same rule.
package webhook

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// ServiceResolver resolves a webhook's service reference. kapi serves no
// Services, so the mapping is given at start (--service-resolver): each
// "namespace/name:port" goes to a "host:port" reachable from kapi. The TLS
// server name stays the service's DNS name, "name.namespace.svc", as with
// kube-apiserver, so the webhook's certificate must be valid for it.
type ServiceResolver struct {
	endpoints map[string]string
}

// ParseServiceResolver reads a comma-separated list of
// "namespace/name:port=host:port" entries (empty: no services).
func ParseServiceResolver(spec string) (*ServiceResolver, error) {
	r := &ServiceResolver{endpoints: map[string]string{}}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		svc, addr, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("service resolver entry %q: want namespace/name:port=host:port", entry)
		}
		nsName, port, err := net.SplitHostPort(svc)
		if err != nil {
			return nil, fmt.Errorf("service resolver entry %q: %v", entry, err)
		}
		ns, name, ok := strings.Cut(nsName, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("service resolver entry %q: want namespace/name:port", entry)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("service resolver entry %q: bad port %q", entry, port)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("service resolver entry %q: address: %v", entry, err)
		}
		r.endpoints[svc] = addr
	}
	return r, nil
}

// ResolveEndpoint implements k8s.io/apiserver/pkg/util/webhook.ServiceResolver.
func (r *ServiceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	key := fmt.Sprintf("%s/%s:%d", namespace, name, port)
	addr, ok := r.endpoints[key]
	if !ok {
		return nil, fmt.Errorf("service %s is not resolvable: kapi serves no Services; map it with --service-resolver %s=<host>:<port>", key, key)
	}
	return &url.URL{Scheme: "https", Host: addr}, nil
}

// String lists the mapping, for logs.
func (r *ServiceResolver) String() string {
	var parts []string
	for k, v := range r.endpoints {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
