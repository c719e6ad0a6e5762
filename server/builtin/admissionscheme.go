package builtin

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The names kube-apiserver's schemes give themselves in their errors
// ("no kind ... is registered for version ... in scheme ..."): the
// file and line that made them, in its release builds.
const (
	legacySchemeName        = "pkg/api/legacyscheme/scheme.go:30"
	apiextensionsSchemeName = "pkg/apiserver/apiserver.go:55"
)

// AdmissionScheme returns the scheme kube-apiserver serves the kind with:
// apiextensions-apiserver's for CRDs (internal and every version, with
// their conversions and defaults), the legacy scheme for the others, which
// knows every built-in kind in every version (client-go's holds the same
// external types; kube's conversions through the internal version are its
// own, so kapi converts between the versions it serves itself).
func (s *typed[T]) AdmissionScheme() (*runtime.Scheme, string) {
	if strings.HasPrefix(s.groupVersion(s.storageVersion), "apiextensions.k8s.io/") {
		return apiextensionsScheme, apiextensionsSchemeName
	}
	return clientgoscheme.Scheme, legacySchemeName
}
