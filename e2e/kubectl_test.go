package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// table parses kubectl's column output: the header's column names and
// one map per row, cut at the header's column offsets.
func parseTable(t testing.TB, out string) (header []string, rows []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) == "" {
		t.Fatalf("no table in output %q", out)
	}
	head := lines[0]
	var starts []int
	for i := 0; i < len(head); i++ {
		if head[i] != ' ' && (i == 0 || head[i-1] == ' ' && (i < 2 || head[i-2] == ' ')) {
			starts = append(starts, i)
		}
	}
	for i, s := range starts {
		end := len(head)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		header = append(header, strings.TrimSpace(head[s:end]))
	}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, s := range starts {
			end := len(line)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			if s < len(line) {
				row[header[i]] = strings.TrimSpace(line[s:end])
			} else {
				row[header[i]] = ""
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

func rowByName(rows []map[string]string, name string) map[string]string {
	for _, r := range rows {
		if r["NAME"] == name {
			return r
		}
	}
	return nil
}

func expectHeader(t testing.TB, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("header %q, want %q", got, want)
	}
}

func getJSON(t testing.TB, k *kapi, args ...string) *unstructured.Unstructured {
	t.Helper()
	out := k.mustKubectl(t, append(append([]string{"get"}, args...), "-o", "json")...)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(out)); err != nil {
		t.Fatalf("kubectl get %v -o json: %v\n%s", args, err, out)
	}
	return u
}

func expectNotFound(t testing.TB, k *kapi, args ...string) {
	t.Helper()
	out, errOut, err := k.kubectl(t, append([]string{"get"}, args...)...)
	if err == nil || !strings.Contains(errOut, "(NotFound)") {
		t.Errorf("kubectl get %v: err=%v stdout=%q stderr=%q, want a NotFound error", args, err, out, errOut)
	}
}

func TestKubectlAPIResources(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	out := k.mustKubectl(t, "api-resources")
	header, rows := parseTable(t, out)
	expectHeader(t, header, "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")
	want := []map[string]string{
		{"NAME": "namespaces", "SHORTNAMES": "ns", "APIVERSION": "v1", "NAMESPACED": "false", "KIND": "Namespace"},
		{"NAME": "customresourcedefinitions", "SHORTNAMES": "crd,crds", "APIVERSION": "apiextensions.k8s.io/v1", "NAMESPACED": "false", "KIND": "CustomResourceDefinition"},
		{"NAME": "mutatingwebhookconfigurations", "SHORTNAMES": "", "APIVERSION": "admissionregistration.k8s.io/v1", "NAMESPACED": "false", "KIND": "MutatingWebhookConfiguration"},
		{"NAME": "validatingwebhookconfigurations", "SHORTNAMES": "", "APIVERSION": "admissionregistration.k8s.io/v1", "NAMESPACED": "false", "KIND": "ValidatingWebhookConfiguration"},
		{"NAME": "validatingadmissionpolicies", "SHORTNAMES": "", "APIVERSION": "admissionregistration.k8s.io/v1", "NAMESPACED": "false", "KIND": "ValidatingAdmissionPolicy"},
		{"NAME": "validatingadmissionpolicybindings", "SHORTNAMES": "", "APIVERSION": "admissionregistration.k8s.io/v1", "NAMESPACED": "false", "KIND": "ValidatingAdmissionPolicyBinding"},
		{"NAME": "deviceclasses", "SHORTNAMES": "", "APIVERSION": "resource.k8s.io/v1beta2", "NAMESPACED": "false", "KIND": "DeviceClass"},
	}
	for _, w := range want {
		got := rowByName(rows, w["NAME"])
		if got == nil {
			t.Errorf("api-resources lacks %s:\n%s", w["NAME"], out)
			continue
		}
		for col, v := range w {
			if got[col] != v {
				t.Errorf("api-resources %s: %s = %q, want %q", w["NAME"], col, got[col], v)
			}
		}
	}
	// A resource is listed once, under its preferred version: v1beta1
	// policies are not a second row.
	count := 0
	for _, r := range rows {
		if r["NAME"] == "validatingadmissionpolicies" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("validatingadmissionpolicies listed %d times:\n%s", count, out)
	}
}

func TestKubectlNamespaces(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)

	t.Run("initial", func(t *testing.T) {
		header, rows := parseTable(t, k.mustKubectl(t, "get", "ns"))
		expectHeader(t, header, "NAME", "STATUS", "AGE")
		for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			r := rowByName(rows, name)
			if r == nil {
				t.Errorf("namespace %s missing", name)
				continue
			}
			if r["STATUS"] != "Active" {
				t.Errorf("namespace %s STATUS %q, want Active", name, r["STATUS"])
			}
		}
		if len(rows) != 4 {
			t.Errorf("got %d namespaces, want 4: %v", len(rows), rows)
		}
	})

	t.Run("create and delete", func(t *testing.T) {
		out := k.mustKubectl(t, "create", "ns", "e2e-x")
		if !strings.Contains(out, "namespace/e2e-x created") {
			t.Errorf("create ns output %q", out)
		}
		ns := getJSON(t, k, "ns", "e2e-x")
		if got := ns.GetLabels()["kubernetes.io/metadata.name"]; got != "e2e-x" {
			t.Errorf("label kubernetes.io/metadata.name = %q, want e2e-x", got)
		}
		// kubectl delete waits until the namespace is gone.
		out = k.mustKubectl(t, "delete", "ns", "e2e-x", "--timeout=20s")
		if !strings.Contains(out, `namespace "e2e-x" deleted`) {
			t.Errorf("delete ns output %q", out)
		}
		expectNotFound(t, k, "ns", "e2e-x")
	})

	t.Run("default is immortal", func(t *testing.T) {
		_, errOut, err := k.kubectl(t, "delete", "ns", "default", "--wait=false")
		if err == nil || !strings.Contains(errOut, "Forbidden") {
			t.Errorf("delete ns default: err=%v stderr=%q, want Forbidden", err, errOut)
		}
		if ns := getJSON(t, k, "ns", "default"); ns.GetDeletionTimestamp() != nil {
			t.Errorf("default got a deletionTimestamp")
		}
	})
}

// kubectlKind is one kind's kubectl round trip.
type kubectlKind struct {
	resource string // as typed on the kubectl command line
	name     string
	manifest string
	// edit turns the manifest into the replacement.
	edit       func(string) string
	apiVersion string
	kind       string
	header     []string
	// row is the table row (wide output) expected for the object after
	// creation, without AGE / CREATED AT.
	row map[string]string
	// replaced checks the object after replace.
	replaced func(t testing.TB, u *unstructured.Unstructured)
}

func TestKubectlCRUD(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	kinds := []kubectlKind{
		{
			resource: "customresourcedefinitions", name: "widgets.example.com", manifest: crdYAML,
			edit:       func(s string) string { return strings.Replace(s, "shortNames: [wd]", "shortNames: [wd, wdg]", 1) },
			apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition",
			header: []string{"NAME", "CREATED AT"},
			row:    map[string]string{"NAME": "widgets.example.com"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				sn, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "shortNames")
				if strings.Join(sn, ",") != "wd,wdg" {
					t.Errorf("shortNames after replace %v", sn)
				}
				// Defaults the server fills in.
				lk, _, _ := unstructured.NestedString(u.Object, "spec", "names", "listKind")
				if lk != "WidgetList" {
					t.Errorf("listKind %q, want WidgetList", lk)
				}
			},
		},
		{
			resource: "mutatingwebhookconfigurations", name: "mwc-e2e", manifest: mwcYAML,
			edit:       func(s string) string { return strings.Replace(s, `["CREATE"]`, `["CREATE", "UPDATE"]`, 1) },
			apiVersion: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration",
			header: []string{"NAME", "WEBHOOKS", "AGE"},
			row:    map[string]string{"NAME": "mwc-e2e", "WEBHOOKS": "1"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
				rules := hooks[0].(map[string]interface{})["rules"].([]interface{})
				got, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]interface{}), "operations")
				if strings.Join(got, ",") != "CREATE,UPDATE" {
					t.Errorf("operations after replace %v", got)
				}
				if rp, _, _ := unstructured.NestedString(hooks[0].(map[string]interface{}), "reinvocationPolicy"); rp != "Never" {
					t.Errorf("reinvocationPolicy %q, want the default Never", rp)
				}
			},
		},
		{
			resource: "validatingwebhookconfigurations", name: "vwc-e2e", manifest: vwcYAML,
			edit: func(s string) string {
				return strings.Replace(s, "https://validate.example.com/hook2", "https://validate.example.com/hook3", 1)
			},
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
			header: []string{"NAME", "WEBHOOKS", "AGE"},
			row:    map[string]string{"NAME": "vwc-e2e", "WEBHOOKS": "2"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
				url, _, _ := unstructured.NestedString(hooks[1].(map[string]interface{}), "clientConfig", "url")
				if url != "https://validate.example.com/hook3" {
					t.Errorf("url after replace %q", url)
				}
			},
		},
		{
			resource: "validatingadmissionpolicies", name: "max-replicas", manifest: vapV1beta1YAML,
			edit: func(s string) string {
				return strings.Replace(s, `  - expression: "object.spec.replicas >= 1"`, "  - expression: \"object.spec.replicas >= 1\"\n  - expression: \"object.spec.replicas != 3\"", 1)
			},
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy",
			header: []string{"NAME", "VALIDATIONS", "PARAMKIND", "AGE"},
			row:    map[string]string{"NAME": "max-replicas", "VALIDATIONS": "2", "PARAMKIND": "v1/ConfigMap"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedSlice(u.Object, "spec", "validations")
				if len(v) != 3 {
					t.Errorf("%d validations after replace, want 3", len(v))
				}
			},
		},
		{
			resource: "validatingadmissionpolicybindings", name: "max-replicas-binding", manifest: vapBindingYAML,
			edit: func(s string) string {
				return strings.Replace(s, "validationActions: [Deny]", "validationActions: [Deny, Audit]", 1)
			},
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding",
			header: []string{"NAME", "POLICYNAME", "PARAMREF", "AGE"},
			// kube-apiserver prints a paramRef name without a namespace
			// as "*/<name>".
			row: map[string]string{"NAME": "max-replicas-binding", "POLICYNAME": "max-replicas", "PARAMREF": "*/replica-limits"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				a, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "validationActions")
				if strings.Join(a, ",") != "Deny,Audit" {
					t.Errorf("validationActions after replace %v", a)
				}
			},
		},
		{
			resource: "deviceclasses", name: "gpu.example.com", manifest: deviceClassYAML,
			edit: func(s string) string {
				return strings.Replace(s, `device.driver == "gpu.example.com"`, `device.driver == "gpu2.example.com"`, 1)
			},
			apiVersion: "resource.k8s.io/v1beta2", kind: "DeviceClass",
			header: []string{"NAME", "AGE"},
			row:    map[string]string{"NAME": "gpu.example.com"},
			replaced: func(t testing.TB, u *unstructured.Unstructured) {
				sel, _, _ := unstructured.NestedSlice(u.Object, "spec", "selectors")
				expr, _, _ := unstructured.NestedString(sel[0].(map[string]interface{}), "cel", "expression")
				if expr != `device.driver == "gpu2.example.com"` {
					t.Errorf("expression after replace %q", expr)
				}
			},
		},
	}
	for _, kk := range kinds {
		t.Run(kk.kind, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, "obj.yaml", kk.manifest)
			out := k.mustKubectl(t, "create", "-f", file)
			if !strings.Contains(out, "/"+kk.name+" created") {
				t.Errorf("create output %q", out)
			}

			u := getJSON(t, k, kk.resource, kk.name)
			if u.GetAPIVersion() != kk.apiVersion || u.GetKind() != kk.kind || u.GetName() != kk.name {
				t.Errorf("got %s %s %q, want %s %s %q", u.GetAPIVersion(), u.GetKind(), u.GetName(), kk.apiVersion, kk.kind, kk.name)
			}
			if u.GetUID() == "" || u.GetResourceVersion() == "" || u.GetCreationTimestamp().Time.IsZero() || u.GetGeneration() != 1 {
				t.Errorf("server-set metadata missing: uid=%q rv=%q created=%v generation=%d", u.GetUID(), u.GetResourceVersion(), u.GetCreationTimestamp(), u.GetGeneration())
			}

			yamlOut := k.mustKubectl(t, "get", kk.resource, kk.name, "-o", "yaml")
			y := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(yamlOut), &y); err != nil {
				t.Fatalf("-o yaml: %v\n%s", err, yamlOut)
			}
			if y["kind"] != kk.kind || y["metadata"].(map[string]interface{})["uid"] != string(u.GetUID()) {
				t.Errorf("-o yaml disagrees with -o json:\n%s", yamlOut)
			}

			for _, format := range [][]string{nil, {"-o", "wide"}} {
				args := append([]string{"get", kk.resource, kk.name}, format...)
				header, rows := parseTable(t, k.mustKubectl(t, args...))
				expectHeader(t, header, kk.header...)
				if len(rows) != 1 {
					t.Fatalf("kubectl %v: %d rows, want 1", args, len(rows))
				}
				for col, v := range kk.row {
					if rows[0][col] != v {
						t.Errorf("kubectl %v: %s = %q, want %q", args, col, rows[0][col], v)
					}
				}
			}

			// The list shows it too.
			_, rows := parseTable(t, k.mustKubectl(t, "get", kk.resource))
			if rowByName(rows, kk.name) == nil {
				t.Errorf("kubectl get %s does not list %s", kk.resource, kk.name)
			}

			out = k.mustKubectl(t, "replace", "-f", writeFile(t, "obj2.yaml", kk.edit(kk.manifest)))
			if !strings.Contains(out, "/"+kk.name+" replaced") {
				t.Errorf("replace output %q", out)
			}
			r := getJSON(t, k, kk.resource, kk.name)
			if r.GetUID() != u.GetUID() {
				t.Errorf("uid changed on replace: %s -> %s", u.GetUID(), r.GetUID())
			}
			if r.GetGeneration() != 2 {
				t.Errorf("generation after a spec replace %d, want 2", r.GetGeneration())
			}
			if rvInt(t, r.GetResourceVersion()) <= rvInt(t, u.GetResourceVersion()) {
				t.Errorf("resourceVersion did not increase on replace: %s -> %s", u.GetResourceVersion(), r.GetResourceVersion())
			}
			kk.replaced(t, r)

			out = k.mustKubectl(t, "delete", kk.resource, kk.name, "--timeout=20s")
			if !strings.Contains(out, `"`+kk.name+`" deleted`) {
				t.Errorf("delete output %q", out)
			}
			expectNotFound(t, k, kk.resource, kk.name)
		})
	}
}

func TestKubectlPolicyVersions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	k.mustKubectl(t, "create", "-f", writeFile(t, "vap.yaml", vapV1beta1YAML))
	beta := getJSON(t, k, "validatingadmissionpolicies.v1beta1.admissionregistration.k8s.io", "max-replicas")
	v1 := getJSON(t, k, "validatingadmissionpolicies.v1.admissionregistration.k8s.io", "max-replicas")
	if beta.GetAPIVersion() != "admissionregistration.k8s.io/v1beta1" {
		t.Errorf("v1beta1 read has apiVersion %q", beta.GetAPIVersion())
	}
	if v1.GetAPIVersion() != "admissionregistration.k8s.io/v1" {
		t.Errorf("v1 read has apiVersion %q", v1.GetAPIVersion())
	}
	if beta.GetUID() == "" || beta.GetUID() != v1.GetUID() || beta.GetResourceVersion() != v1.GetResourceVersion() {
		t.Errorf("v1beta1 and v1 disagree: uid %s/%s rv %s/%s", beta.GetUID(), v1.GetUID(), beta.GetResourceVersion(), v1.GetResourceVersion())
	}
	bs, _, _ := unstructured.NestedFieldCopy(beta.Object, "spec")
	vs, _, _ := unstructured.NestedFieldCopy(v1.Object, "spec")
	if fmtJSON(bs) != fmtJSON(vs) {
		t.Errorf("spec differs between versions:\nv1beta1: %s\nv1: %s", fmtJSON(bs), fmtJSON(vs))
	}
	// A binding created through v1beta1 reads back through v1.
	bindingBeta := strings.Replace(vapBindingYAML, "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1", 1)
	k.mustKubectl(t, "create", "-f", writeFile(t, "b.yaml", bindingBeta))
	b := getJSON(t, k, "validatingadmissionpolicybindings.v1.admissionregistration.k8s.io", "max-replicas-binding")
	if p, _, _ := unstructured.NestedString(b.Object, "spec", "policyName"); p != "max-replicas" {
		t.Errorf("binding policyName %q", p)
	}
	k.mustKubectl(t, "delete", "validatingadmissionpolicies.v1beta1.admissionregistration.k8s.io", "max-replicas")
	expectNotFound(t, k, "validatingadmissionpolicies.v1.admissionregistration.k8s.io", "max-replicas")
}

func TestKubectlInvalidCRD(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	bad := strings.Replace(crdYAML, "- name: v1", "- name: V_1", 1)
	out, errOut, err := k.kubectl(t, "create", "-f", writeFile(t, "bad.yaml", bad))
	if err == nil {
		t.Fatalf("invalid CRD accepted: %s", out)
	}
	for _, want := range []string{`"widgets.example.com" is invalid`, "spec.versions[0].name", `Invalid value: "V_1"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	expectNotFound(t, k, "crd", "widgets.example.com")

	// The name must be <plural>.<group>.
	bad = strings.Replace(crdYAML, "name: widgets.example.com", "name: gadgets.example.com", 1)
	_, errOut, err = k.kubectl(t, "create", "-f", writeFile(t, "bad2.yaml", bad))
	if err == nil || !strings.Contains(errOut, "is invalid") || !strings.Contains(errOut, "metadata.name") {
		t.Errorf("CRD with a wrong name: err=%v stderr=%q", err, errOut)
	}
}

func TestKubectlLabelAnnotate(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	k.mustKubectl(t, "create", "-f", writeFile(t, "vwc.yaml", vwcYAML))
	k.mustKubectl(t, "create", "-f", writeFile(t, "dc.yaml", deviceClassYAML))
	before := getJSON(t, k, "validatingwebhookconfigurations", "vwc-e2e")

	k.mustKubectl(t, "label", "validatingwebhookconfigurations", "vwc-e2e", "team=a", "tier=web")
	k.mustKubectl(t, "annotate", "validatingwebhookconfigurations", "vwc-e2e", "example.com/note=hello")
	u := getJSON(t, k, "validatingwebhookconfigurations", "vwc-e2e")
	if l := u.GetLabels(); l["team"] != "a" || l["tier"] != "web" {
		t.Errorf("labels %v", l)
	}
	if a := u.GetAnnotations(); a["example.com/note"] != "hello" {
		t.Errorf("annotations %v", a)
	}
	if u.GetGeneration() != before.GetGeneration() {
		t.Errorf("metadata-only change bumped generation %d -> %d", before.GetGeneration(), u.GetGeneration())
	}

	// Relabelling needs --overwrite; without it kubectl refuses.
	if _, _, err := k.kubectl(t, "label", "validatingwebhookconfigurations", "vwc-e2e", "team=b"); err == nil {
		t.Errorf("label without --overwrite succeeded")
	}
	k.mustKubectl(t, "label", "validatingwebhookconfigurations", "vwc-e2e", "team=b", "--overwrite")
	k.mustKubectl(t, "label", "validatingwebhookconfigurations", "vwc-e2e", "tier-")
	u = getJSON(t, k, "validatingwebhookconfigurations", "vwc-e2e")
	if l := u.GetLabels(); l["team"] != "b" || l["tier"] != "" || len(l) != 1 {
		t.Errorf("labels after overwrite and removal %v", l)
	}

	// Selecting by the new label.
	_, rows := parseTable(t, k.mustKubectl(t, "get", "validatingwebhookconfigurations", "-l", "team=b"))
	if len(rows) != 1 || rows[0]["NAME"] != "vwc-e2e" {
		t.Errorf("-l team=b rows %v", rows)
	}

	k.mustKubectl(t, "label", "deviceclasses", "gpu.example.com", "vendor=example")
	k.mustKubectl(t, "annotate", "deviceclasses", "gpu.example.com", "owner=me")
	d := getJSON(t, k, "deviceclasses", "gpu.example.com")
	if d.GetLabels()["vendor"] != "example" || d.GetAnnotations()["owner"] != "me" || d.GetGeneration() != 1 {
		t.Errorf("deviceclass after label/annotate: labels %v annotations %v generation %d", d.GetLabels(), d.GetAnnotations(), d.GetGeneration())
	}
}

// kubectlValidationSchema is kube's kubectl e2e schemaFoo
// (test/e2e/kubectl/kubectl.go), the schema of its "Kubectl validation"
// cases; kubectlEmbeddedSchema is its schemaFooEmbedded.
const kubectlValidationSchema = `
type: object
description: Foo CRD for Testing
properties:
  spec:
    type: object
    description: Specification of Foo
    properties:
      bars:
        description: List of Bars and their specs.
        type: array
        items:
          type: object
          required: [name]
          properties:
            name: {description: Name of Bar., type: string}
            age: {description: Age of Bar., type: string}
            bazs: {description: List of Bazs., items: {type: string}, type: array}
  status:
    description: Status of Foo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object
          properties:
            name: {description: Name of Bar., type: string}
            available: {description: Whether the Bar is installed., type: boolean}
            quxType: {description: Indicates to external qux type., pattern: in-tree|out-of-tree, type: string}
`

const kubectlEmbeddedSchema = `
type: object
description: Foo CRD with an embedded resource
properties:
  spec:
    type: object
    properties:
      template:
        type: object
        x-kubernetes-embedded-resource: true
        properties:
          metadata:
            type: object
            properties:
              name: {type: string}
          spec:
            type: object
  metadata:
    type: object
    properties:
      name: {type: string}
`

// TestKubectlValidationCases replays the "Kubectl validation" cases of
// kube's kubectl e2e tests: kubectl create and apply --validate=true of
// custom resources against a CRD with no schema, with schemaFoo, with
// schemaFoo preserving unknown fields at its root only, and with an
// embedded resource whose unknown metadata fields are refused at both
// levels.
func TestKubectlValidationCases(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	crd := func(plural, schema string) string {
		kind := "e2e-test-kubectl-" + plural + "-crd"
		k.mustKubectl(t, "create", "-f", writeFile(t, plural+".yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: e2e-test-kubectl-`+plural+`-crds.kubectl.example.com}
spec:
  group: kubectl.example.com
  scope: Namespaced
  names: {plural: e2e-test-kubectl-`+plural+`-crds, singular: `+kind+`, kind: `+kind+`, listKind: `+kind+`List}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:`+strings.ReplaceAll(schema, "\n", "\n        ")))
		k.mustKubectl(t, "wait", "--for=condition=Established", "--timeout=10s", "crd/e2e-test-kubectl-"+plural+"-crds.kubectl.example.com")
		return kind
	}
	meta := func(kind, name string) string {
		return `"kind":"` + kind + `","apiVersion":"kubectl.example.com/v1","metadata":{"name":"` + name + `"}`
	}
	// createApply is kube's createApplyCustomResource.
	createApply := func(kind, cr string) error {
		plural := strings.TrimSuffix(kind, "-crd") + "-crds"
		for _, verb := range []string{"create", "apply"} {
			if _, errOut, err := k.kubectlIn(t, cr, verb, "--validate=true", "-f", "-"); err != nil {
				return fmt.Errorf("%s: %v: %s", verb, err, errOut)
			}
			k.mustKubectl(t, "delete", plural, "test-cr")
		}
		return nil
	}

	noSchema := crd("a", "\ntype: object\nx-kubernetes-preserve-unknown-fields: true")
	if err := createApply(noSchema, `{`+meta(noSchema, "test-cr")+`,"a":{"b":[{"c":"d"}]}}`); err != nil {
		t.Errorf("CR with unknown fields, CRD without a schema: %v", err)
	}

	foo := crd("b", kubectlValidationSchema)
	if err := createApply(foo, `{`+meta(foo, "test-cr")+`,"spec":{"bars":[{"name":"test-bar"}]}}`); err != nil {
		t.Errorf("valid CR: %v", err)
	}

	partial := crd("c", kubectlValidationSchema+"x-kubernetes-preserve-unknown-fields: true\n")
	err := createApply(partial, `{`+meta(partial, "test-cr")+`,"spec":{"bars":[{"name":"test-bar"}],"extraProperty":"arbitrary-value"}}`)
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.extraProperty"`) {
		t.Errorf("unknown field below a root that preserves unknown fields: %v", err)
	}
	if err := createApply(partial, `{`+meta(partial, "test-cr")+`,"spec":{"bars":[{"name":"test-bar"}]},"extraProperty":"arbitrary-value"}`); err != nil {
		t.Errorf("unknown field at a root that preserves unknown fields: %v", err)
	}

	embedded := crd("d", kubectlEmbeddedSchema)
	pattern := `{"kind":"` + embedded + `","apiVersion":"kubectl.example.com/v1","metadata":{%s"name":"%s"},
  "spec":{"template":{"apiVersion":"foo/v1","kind":"Sub","metadata":{%s"name":"subobject","namespace":"default"}}}}`
	_, errOut, err := k.kubectlIn(t, fmt.Sprintf(pattern, `"unknownMeta":"foo",`, "test-cr", ""), "create", "--validate=true", "-f", "-")
	if err == nil || !strings.Contains(errOut, `unknown field "metadata.unknownMeta"`) || strings.Contains(errOut, `unknown field "metadata.namespace"`) {
		t.Errorf("unknown root metadata field: err=%v stderr=%q", err, errOut)
	}
	_, errOut, err = k.kubectlIn(t, fmt.Sprintf(pattern, "", "test-cr-embedded", `"unknownMetaEmbedded":"bar",`), "create", "--validate=true", "-f", "-")
	if err == nil || !strings.Contains(errOut, `unknown field "spec.template.metadata.unknownMetaEmbedded"`) || strings.Contains(errOut, `unknown field "spec.template.metadata.namespace"`) {
		t.Errorf("unknown embedded metadata field: err=%v stderr=%q", err, errOut)
	}
}
