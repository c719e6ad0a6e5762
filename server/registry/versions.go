package registry

import (
	"sort"

	"k8s.io/apimachinery/pkg/version"
)

// SortVersions orders versions as discovery lists them: the "kube-like"
// order (GA before beta before alpha, higher major and minor first), with
// other names after them in lexical order.
func SortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0
	})
}
