package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestZZScratch(t *testing.T) {
	k := startMemKapi(t)
	ctx := ctxT(t)
	old := `"'minReplicas (' + string(self.minReplicas) + ') exceeds replicas (' + string(self.replicas) + ')'"`
	for _, m := range []string{
		`"'minReplicas ' + string(self.minReplicas) + ' exceeds replicas ' + string(self.replicas)"`,
		`"'minReplicas exceeds replicas ' + string(self.replicas)"`,
		`"'minReplicas (%d) exceeds replicas (%d)'.format([self.minReplicas, self.replicas])"`,
	} {
		crd := crdFromYAML(t, strings.Replace(gadgetCRDYAML, old, m, 1))
		_, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		t.Logf("%s: %v", m, err)
		k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
	}
}
