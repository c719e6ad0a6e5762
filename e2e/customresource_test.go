package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// Custom resources: the CRDs' names and conditions, and the resources they
// serve, as kube-apiserver v1.33 serves them.

// cronTabCRDYAML is the CronTab of the Kubernetes docs ("Extend the
// Kubernetes API with CustomResourceDefinitions"), with a priority-1
// printer column (Image) between Replicas and Age.
const cronTabCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
              image:
                type: string
              replicas:
                type: integer
          status:
            type: object
            properties:
              replicas:
                type: integer
              labelSelector:
                type: string
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      description: The number of jobs launched by the CronJob
      jsonPath: .spec.replicas
    - name: Image
      type: string
      priority: 1
      jsonPath: .spec.image
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
    - ct
    categories:
    - all
`

const cronTabYAML = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: 1
`

// crdFromYAML decodes a CRD manifest for client-go.
func crdFromYAML(t testing.TB, manifest string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(manifest), crd); err != nil {
		t.Fatalf("CRD manifest: %v", err)
	}
	return crd
}

// createCRD creates crd and waits until it is Established.
func createCRD(t testing.TB, k *kapi, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctxT(t), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	return waitCRDCondition(t, k, crd.Name, apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
}

// waitCRDCondition waits until the CRD has the condition with that status.
func waitCRDCondition(t testing.TB, k *kapi, name string, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var got *apiextensionsv1.CustomResourceDefinition
	eventually(t, 10*time.Second, "CRD "+name+" condition "+string(typ)+"="+string(status), func() (bool, error) {
		crd, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = crd
		c := crdCondition(crd, typ)
		return c != nil && c.Status == status, fmt.Errorf("status %s", fmtJSON(crd.Status))
	})
	return got
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// expectCondition checks a CRD condition's status, reason and message.
func expectCondition(t testing.TB, crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason, message string) {
	t.Helper()
	c := crdCondition(crd, typ)
	if c == nil {
		t.Errorf("CRD %s has no %s condition: %s", crd.Name, typ, fmtJSON(crd.Status.Conditions))
		return
	}
	if c.Status != status || c.Reason != reason || c.Message != message {
		t.Errorf("CRD %s condition %s = %s/%q/%q, want %s/%q/%q", crd.Name, typ, c.Status, c.Reason, c.Message, status, reason, message)
	}
	if c.LastTransitionTime.IsZero() {
		t.Errorf("CRD %s condition %s has no lastTransitionTime", crd.Name, typ)
	}
}

// statusOf returns the Status of a client-go error (failing when it is not
// an API error).
func statusOf(t testing.TB, err error) metav1.Status {
	t.Helper()
	if err == nil {
		t.Errorf("request succeeded, want an error")
		return metav1.Status{}
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Errorf("error %v (%T) is not an API Status", err, err)
		return metav1.Status{}
	}
	return se.Status()
}

// expectInvalid checks a 422 Invalid answer: the message and the exact
// causes, in order.
func expectInvalid(t testing.TB, err error, message string, causes ...metav1.StatusCause) {
	t.Helper()
	st := statusOf(t, err)
	if st.Code == 0 {
		return
	}
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
		t.Errorf("error %d %s %q, want 422 Invalid", st.Code, st.Reason, st.Message)
	}
	if st.Message != message {
		t.Errorf("message\n %q\nwant\n %q", st.Message, message)
	}
	var got []metav1.StatusCause
	if st.Details != nil {
		got = st.Details.Causes
	}
	if !reflect.DeepEqual(got, causes) {
		t.Errorf("causes\n %s\nwant\n %s", fmtJSON(got), fmtJSON(causes))
	}
}

func TestCustomResourceKubectl(t *testing.T) {
	t.Parallel()
	requireKubectl(t)
	k := startMemKapi(t)
	crdFile := writeFile(t, "crd.yaml", cronTabCRDYAML)
	crFile := writeFile(t, "crontab.yaml", cronTabYAML)

	out := k.mustKubectl(t, "apply", "-f", crdFile)
	if want := "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created\n"; out != want {
		t.Errorf("kubectl apply CRD: %q, want %q", out, want)
	}
	out = k.mustKubectl(t, "wait", "--for=condition=established", "--timeout=10s", "crd/crontabs.stable.example.com")
	if want := "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com condition met\n"; out != want {
		t.Errorf("kubectl wait: %q, want %q", out, want)
	}

	// The names are accepted and the CRD is established, as the naming
	// and establishing controllers say.
	crdJSON := k.mustKubectl(t, "get", "crd", "crontabs.stable.example.com", "-o", "json")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(crdJSON), crd); err != nil {
		t.Fatal(err)
	}
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList",
		ShortNames: []string{"ct"}, Categories: []string{"all"},
	}
	if !reflect.DeepEqual(crd.Status.AcceptedNames, wantNames) {
		t.Errorf("acceptedNames %s, want %s", fmtJSON(crd.Status.AcceptedNames), fmtJSON(wantNames))
	}
	expectCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
	expectCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
	if !reflect.DeepEqual(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", crd.Status.StoredVersions)
	}

	out = k.mustKubectl(t, "create", "-f", crFile)
	if want := "crontab.stable.example.com/my-new-cron-object created\n"; out != want {
		t.Errorf("kubectl create CronTab: %q, want %q", out, want)
	}

	// Every name of the resource reaches it.
	for _, name := range []string{"crontabs", "crontab", "ct", "crontabs.stable.example.com", "crontab.v1.stable.example.com", "CronTab"} {
		header, rows := parseTable(t, k.mustKubectl(t, "get", name))
		expectHeader(t, header, "NAME", "SPEC", "REPLICAS", "AGE")
		if len(rows) != 1 || rows[0]["NAME"] != "my-new-cron-object" || rows[0]["SPEC"] != "* * * * */5" || rows[0]["REPLICAS"] != "1" {
			t.Errorf("kubectl get %s rows %v", name, rows)
		}
	}
	// The priority-1 column shows only with -o wide, in its place.
	header, rows := parseTable(t, k.mustKubectl(t, "get", "ct", "-o", "wide"))
	expectHeader(t, header, "NAME", "SPEC", "REPLICAS", "IMAGE", "AGE")
	if len(rows) != 1 || rows[0]["IMAGE"] != "my-awesome-cron-image" {
		t.Errorf("kubectl get ct -o wide rows %v", rows)
	}
	// The category "all".
	if out := k.mustKubectl(t, "get", "all"); !strings.Contains(out, "my-new-cron-object") {
		t.Errorf("kubectl get all does not list the CronTab:\n%s", out)
	}
	if out := k.mustKubectl(t, "get", "crontab", "my-new-cron-object", "-o", "name"); out != "crontab.stable.example.com/my-new-cron-object\n" {
		t.Errorf("kubectl get -o name: %q", out)
	}

	// A merge patch.
	out = k.mustKubectl(t, "patch", "crontab", "my-new-cron-object", "--type", "merge", "-p", `{"spec":{"replicas":2}}`)
	if want := "crontab.stable.example.com/my-new-cron-object patched\n"; out != want {
		t.Errorf("kubectl patch --type merge: %q, want %q", out, want)
	}
	if got := getJSON(t, k, "crontab", "my-new-cron-object"); got.Object["spec"].(map[string]interface{})["replicas"] != int64(2) {
		t.Errorf("spec after merge patch: %v", got.Object["spec"])
	}

	// A strategic merge patch is refused: custom resources have no
	// patch strategies.
	const unsupported = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
	// (kubectl words the server's 415 so.)
	o, errOut, err := k.kubectl(t, "patch", "crontab", "my-new-cron-object", "--type", "strategic", "-p", `{"spec":{"replicas":3}}`)
	if err == nil || !strings.Contains(errOut, "error: application/strategic-merge-patch+json is not supported by stable.example.com/v1, Kind=CronTab: "+unsupported) {
		t.Errorf("kubectl patch --type strategic: err=%v stdout=%q stderr=%q, want the 415 UnsupportedMediaType error", err, o, errOut)
	}
	r := k.do(t, "PATCH", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object", []byte(`{"spec":{"replicas":3}}`),
		"Content-Type: application/strategic-merge-patch+json")
	expectStatus(t, r, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, unsupported)

	// Server-side apply: shared values take no conflict, a changed value
	// owned by another manager does, --force-conflicts takes it.
	ssa := strings.Replace(cronTabYAML, "  name: my-new-cron-object\n", "  name: my-new-cron-object\n  labels:\n    tier: batch\n", 1)
	ssa = strings.Replace(ssa, "  replicas: 1\n", "", 1)
	out = k.mustKubectl(t, "apply", "--server-side", "-f", writeFile(t, "ssa.yaml", ssa))
	if want := "crontab.stable.example.com/my-new-cron-object serverside-applied\n"; out != want {
		t.Errorf("kubectl apply --server-side: %q, want %q", out, want)
	}
	got, err := k.Dyn.Resource(gvrCronTabs).Namespace("default").Get(ctxT(t), "my-new-cron-object", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetLabels()["tier"] != "batch" {
		t.Errorf("labels after server-side apply: %v", got.GetLabels())
	}
	if mgr := findManaged(got.GetManagedFields(), "kubectl", metav1.ManagedFieldsOperationApply, ""); mgr == nil {
		t.Errorf("no Apply entry of manager kubectl: %s", describeManaged(got.GetManagedFields()))
	} else {
		expectOwns(t, mgr, true, "f:metadata", "f:labels", "f:tier")
		expectOwns(t, mgr, true, "f:spec", "f:image")
	}
	changed := strings.Replace(ssa, "my-awesome-cron-image", "my-other-image", 1)
	changedFile := writeFile(t, "ssa2.yaml", changed)
	o, errOut, err = k.kubectl(t, "apply", "--server-side", "-f", changedFile)
	if err == nil || !strings.Contains(errOut, `conflict with "kubectl-create"`) || !strings.Contains(errOut, ".spec.image") {
		t.Errorf("conflicting server-side apply: err=%v stdout=%q stderr=%q, want a conflict with kubectl-create on .spec.image", err, o, errOut)
	}
	k.mustKubectl(t, "apply", "--server-side", "--force-conflicts", "-f", changedFile)
	if got := getJSON(t, k, "crontab", "my-new-cron-object"); got.Object["spec"].(map[string]interface{})["image"] != "my-other-image" {
		t.Errorf("spec after forced apply: %v", got.Object["spec"])
	}

	// kubectl scale goes through /scale.
	out = k.mustKubectl(t, "scale", "crontab", "my-new-cron-object", "--replicas=5")
	if want := "crontab.stable.example.com/my-new-cron-object scaled\n"; out != want {
		t.Errorf("kubectl scale: %q, want %q", out, want)
	}
	got = getJSON(t, k, "crontab", "my-new-cron-object")
	if got.Object["spec"].(map[string]interface{})["replicas"] != int64(5) {
		t.Errorf("spec after kubectl scale: %v", got.Object["spec"])
	}
	// The Scale prints with its own columns.
	out = k.mustKubectl(t, "get", "crontab", "my-new-cron-object", "--subresource=scale")
	if lines := strings.Split(out, "\n"); len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME DESIRED AVAILABLE AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "my-new-cron-object 5 ") {
		t.Errorf("kubectl get --subresource=scale:\n%s", out)
	}
	// A subresource the CRD does not serve is the object's NotFound.
	r = k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object/logs", nil)
	st := expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, `crontabs.stable.example.com "my-new-cron-object" not found`)
	if st.Details == nil || st.Details.Name != "my-new-cron-object" || st.Details.Group != "stable.example.com" || st.Details.Kind != "crontabs" {
		t.Errorf("details %+v", st.Details)
	}

	// Deleting the CRD deletes its objects and stops serving them.
	out = k.mustKubectl(t, "delete", "crd", "crontabs.stable.example.com")
	if want := "customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted\n"; out != want {
		t.Errorf("kubectl delete crd: %q, want %q", out, want)
	}
	eventually(t, 10*time.Second, "the CronTab endpoints to go", func() (bool, error) {
		return k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/crontabs", nil).Code == http.StatusNotFound, nil
	})
	r = k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object", nil)
	if r.Code != http.StatusNotFound {
		t.Errorf("GET the CronTab after the CRD went: %d %s, want 404", r.Code, r.Body)
	}
	o, errOut, err = k.kubectl(t, "get", "crontabs")
	// (kubectl may still have the resource in its discovery cache: then
	// the server's 404 shows.)
	if err == nil || !strings.Contains(errOut, `the server doesn't have a resource type "crontabs"`) && !strings.Contains(errOut, "(NotFound)") {
		t.Errorf("kubectl get crontabs after the CRD went: err=%v stdout=%q stderr=%q", err, o, errOut)
	}
	// The same CRD again starts empty: the objects went with it.
	k.mustKubectl(t, "apply", "-f", crdFile)
	k.mustKubectl(t, "wait", "--for=condition=established", "--timeout=10s", "crd/crontabs.stable.example.com")
	o, errOut, err = k.kubectl(t, "get", "crontabs")
	if err != nil || o != "" || !strings.Contains(errOut, "No resources found in default namespace.") {
		t.Errorf("kubectl get crontabs after re-creating the CRD: err=%v stdout=%q stderr=%q, want no resources", err, o, errOut)
	}
}

var gvrCronTabs = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

// A CRD whose plural another CRD of the group already uses (as a short
// name: the CRD's name must be <plural>.<group>, so two CRDs cannot
// request the same plural) has NamesAccepted False and is not served;
// when the other CRD goes, its names are accepted.
func TestCustomResourceNameConflict(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML))

	// The same plural under another CRD name is invalid.
	same := crdFromYAML(t, cronTabCRDYAML)
	same.Name = "crontabs2.stable.example.com"
	_, err := crds.Create(ctx, same, metav1.CreateOptions{})
	expectInvalid(t, err,
		`CustomResourceDefinition.apiextensions.k8s.io "crontabs2.stable.example.com" is invalid: metadata.name: Invalid value: "crontabs2.stable.example.com": must be spec.names.plural+"."+spec.group`,
		metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "crontabs2.stable.example.com": must be spec.names.plural+"."+spec.group`, Field: "metadata.name"})

	// Plural "ct" is the CronTab's short name.
	conflicting := crdFromYAML(t, strings.NewReplacer(
		"name: crontabs.stable.example.com", "name: ct.stable.example.com",
		"plural: crontabs", "plural: ct",
		"singular: crontab", "singular: ctthing",
		"kind: CronTab", "kind: CtThing",
		"- ct\n", "- ctt\n",
	).Replace(cronTabCRDYAML))
	if _, err := crds.Create(ctx, conflicting, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitCRDCondition(t, k, "ct.stable.example.com", apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse)
	expectCondition(t, got, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "PluralConflict", `"ct" is already in use`)
	expectCondition(t, got, apiextensionsv1.Established, apiextensionsv1.ConditionFalse, "NotAccepted", "not all names are accepted")
	// The names without a conflict are accepted, the plural is not.
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{
		Singular: "ctthing", Kind: "CtThing", ListKind: "CtThingList",
		ShortNames: []string{"ctt"}, Categories: []string{"all"},
	}
	if !reflect.DeepEqual(got.Status.AcceptedNames, wantNames) {
		t.Errorf("acceptedNames %s, want %s", fmtJSON(got.Status.AcceptedNames), fmtJSON(wantNames))
	}
	// Nothing of it is served.
	r := k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/ct", nil)
	if r.Code != http.StatusNotFound {
		t.Errorf("GET the conflicting CRD's collection: %d %.200s, want 404", r.Code, r.Body)
	}
	var rl metav1.APIResourceList
	decodeInto(t, k.do(t, "GET", "/apis/stable.example.com/v1", nil), &rl)
	var served []string
	for _, res := range rl.APIResources {
		served = append(served, res.Name)
	}
	if !reflect.DeepEqual(served, []string{"crontabs", "crontabs/status", "crontabs/scale"}) {
		t.Errorf("resources of stable.example.com/v1: %v, want only the CronTab's", served)
	}
	if haveKubectl() {
		for _, name := range []string{"ctthing", "ctt", "CtThing"} {
			o, errOut, err := k.kubectl(t, "get", name)
			if err == nil || !strings.Contains(errOut, `the server doesn't have a resource type "`+name+`"`) {
				t.Errorf("kubectl get %s: err=%v stdout=%q stderr=%q, want an unknown resource type", name, err, o, errOut)
			}
		}
	}

	// Once the CronTab CRD goes, the names are free and the naming
	// controller accepts them.
	if err := crds.Delete(ctx, "crontabs.stable.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitCRDCondition(t, k, "ct.stable.example.com", apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	expectCondition(t, got, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
	if got.Status.AcceptedNames.Plural != "ct" {
		t.Errorf("acceptedNames.plural %q, want ct", got.Status.AcceptedNames.Plural)
	}
	eventually(t, 10*time.Second, "the ct collection to be served", func() (bool, error) {
		return k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/ct", nil).Code == http.StatusOK, nil
	})
}

// While a CRD is terminating, its objects are deleted (a finalizer holds
// one) and no new one may be created; the CRD goes once the last object is
// gone.
// A CRD's deletion removes its custom resources without admission, as
// kube-apiserver's CRD finalizer deletes them through its storage: a policy
// that denies deleting them does not hold the CRD up.
func TestCustomResourceDefinitionDeletionSkipsAdmission(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML))
	crs := k.Dyn.Resource(gvrCronTabs).Namespace("default")
	if _, err := crs.Create(ctx, cronTab("guarded"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindPolicy(t, k, denyDeletesPolicy("no-crontab-deletes", "stable.example.com", "crontabs", "crontabs stay"))
	eventually(t, 10*time.Second, "the policy to deny deleting a CronTab", func() (bool, error) {
		err := crs.Delete(ctx, "guarded", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "crontabs stay"), err
	})
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + crd.Name, ResourceVersion: crd.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// As kube's: marked, then in progress (the finalizer's first write),
	// then deleted by the status update that removes its finalizer (the
	// DELETED event carries the state stored before it, as etcd's does).
	var reasons []string
	timeout := time.After(15 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %v", reasons)
			}
			if c := crdCondition(ev.Object.(*apiextensionsv1.CustomResourceDefinition), apiextensionsv1.Terminating); c != nil {
				reasons = append(reasons, string(ev.Type)+" "+c.Reason)
			}
			done = ev.Type == watch.Deleted
		case <-timeout:
			t.Fatalf("the CRD is not gone after 15s: %v", reasons)
		}
	}
	if want := []string{"MODIFIED InstanceDeletionPending", "MODIFIED InstanceDeletionInProgress", "DELETED InstanceDeletionInProgress"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("the CRD's Terminating condition went %q, want %q", reasons, want)
	}
}

// A change of a CRD's spec, or its deletion, ends the watches of its
// custom resources, as kube-apiserver ends them when it replaces the CRD's
// storage: clients watch again and see the new schema. A status-only write
// to the CRD does not.
func TestCustomResourceWatchEndsWhenCRDChanges(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML))
	crs := k.Dyn.Resource(gvrCronTabs).Namespace("default")
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	const name = "crontabs.stable.example.com"
	ended := func(w watch.Interface, within time.Duration) bool {
		timeout := time.After(within)
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return true
				}
			case <-timeout:
				return false
			}
		}
	}

	w, err := crs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A label on the CRD changes nothing served.
	if _, err := crds.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if ended(w, time.Second) {
		t.Error("a label on the CRD ended the watch of its resources")
	}
	// A new printer column does.
	patch := `[{"op":"add","path":"/spec/versions/0/additionalPrinterColumns","value":[{"name":"Spec","type":"string","jsonPath":".spec.cronSpec"}]}]`
	if _, err := crds.Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if !ended(w, 10*time.Second) {
		t.Error("the watch of the CRD's resources still runs 10s after the CRD's spec changed")
	}
	// So does the CRD's deletion.
	eventually(t, 10*time.Second, "a new watch", func() (bool, error) {
		w, err = crs.Watch(ctx, metav1.ListOptions{})
		return err == nil, err
	})
	defer w.Stop()
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !ended(w, 10*time.Second) {
		t.Error("the watch of the CRD's resources still runs 10s after the CRD's deletion")
	}
}

// While a CRD is being deleted, the watches of its custom resources go on
// and see them deleted, as under kube-apiserver, which keeps the CRD's
// storage until the CRD is gone; they end then.
func TestCustomResourceWatchSeesCRDDeletion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML))
	crs := k.Dyn.Resource(gvrCronTabs).Namespace("default")
	held := cronTab("held")
	held.SetFinalizers([]string{holdFinalizer})
	for _, cr := range []*unstructured.Unstructured{held, cronTab("free")} {
		if _, err := crs.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := crs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := crs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func(what string) watch.Event {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended before %s", what)
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no event for %s in 10s", what)
		}
		return watch.Event{}
	}
	if err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "crontabs.stable.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]watch.EventType{}
	for len(seen) < 2 {
		ev := next("the deletion of the CRD's resources")
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			seen[u.GetName()] = ev.Type
		}
	}
	if seen["free"] != watch.Deleted || seen["held"] != watch.Modified {
		t.Errorf("events while the CRD is deleted: %v, want free DELETED and held MODIFIED (deletionTimestamp)", seen)
	}
	if _, err := crs.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := next("the held resource's deletion"); ev.Type != watch.Deleted; ev = next("the held resource's deletion") {
	}
	// The CRD goes with its last resource, and the watch with it.
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-w.ResultChan():
		case <-deadline:
			t.Fatal("the watch still runs 10s after the CRD's last resource was deleted")
		}
	}
}

func TestCustomResourceDefinitionTerminating(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML))
	crs := k.Dyn.Resource(gvrCronTabs).Namespace("default")
	cr := cronTab("held")
	cr.SetFinalizers([]string{holdFinalizer})
	if _, err := crs.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CRD storage's own DELETE: its preconditions in its words.
	stored, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := k.do(t, "DELETE", collectionPath(gvrCRDs)+"/crontabs.stable.example.com", []byte(`{"preconditions":{"uid":"abc"}}`))
	expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict, `Operation cannot be fulfilled on customresourcedefinitions.apiextensions.k8s.io "crontabs.stable.example.com": Precondition failed: UID in precondition: abc, UID in object meta: `+string(stored.UID))
	r = k.do(t, "DELETE", collectionPath(gvrCRDs)+"/crontabs.stable.example.com", nil)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(r.Body, &crd); err != nil || r.Code != http.StatusOK || crd.Kind != "CustomResourceDefinition" {
		t.Fatalf("DELETE CRD: %d %s", r.Code, r.Body)
	}
	if crd.DeletionTimestamp == nil || !contains(crd.Finalizers, "customresourcecleanup.apiextensions.k8s.io") {
		t.Errorf("DELETE answered deletionTimestamp %v finalizers %v, want set and the cleanup finalizer", crd.DeletionTimestamp, crd.Finalizers)
	}
	// ... which sets the deletionTimestamp alone.
	if crd.Generation != 1 || crd.DeletionGracePeriodSeconds != nil {
		t.Errorf("DELETE answered generation %d deletionGracePeriodSeconds %v, want 1 and none", crd.Generation, crd.DeletionGracePeriodSeconds)
	}
	if c := crdCondition(&crd, apiextensionsv1.Terminating); c == nil || c.Status != apiextensionsv1.ConditionTrue || c.Reason != "InstanceDeletionPending" {
		t.Errorf("DELETE answered conditions %s, want Terminating True InstanceDeletionPending", fmtJSON(crd.Status.Conditions))
	}
	// The object is deleted, and its finalizer holds it.
	var held *unstructured.Unstructured
	eventually(t, 10*time.Second, "the CronTab to be marked deleted", func() (bool, error) {
		var err error
		held, err = crs.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("GET the CronTab held by a finalizer while its CRD terminates: %v; want it kept with a deletionTimestamp until the finalizer goes", err)
		}
		return held.GetDeletionTimestamp() != nil, nil
	})
	// The CRD finalizer reports the deletion under way, as kube's.
	var got *apiextensionsv1.CustomResourceDefinition
	eventually(t, 10*time.Second, "the CRD's Terminating condition to say the deletion is in progress", func() (bool, error) {
		var err error
		got, err = k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := crdCondition(got, apiextensionsv1.Terminating)
		return c != nil && c.Status == apiextensionsv1.ConditionTrue && c.Reason == "InstanceDeletionInProgress" && c.Message == "CustomResource deletion is in progress",
			fmt.Errorf("conditions %s", fmtJSON(got.Status.Conditions))
	})
	w, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=crontabs.stable.example.com", ResourceVersion: got.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Creates are refused once the CRD handler sees the Terminating
	// condition (kube-apiserver's sees it through an informer: soon, not
	// at once).
	attempt := 0
	eventually(t, 5*time.Second, "creates to be refused", func() (bool, error) {
		attempt++
		r = k.do(t, "POST", "/apis/stable.example.com/v1/namespaces/default/crontabs", mustJSON(t, cronTab(fmt.Sprintf("late-%d", attempt)).Object))
		return r.Code != http.StatusCreated, fmt.Errorf("POST: %d", r.Code)
	})
	expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "create not allowed while custom resource definition is terminating")
	// Only the create verb is refused: a server-side apply still creates,
	// as under kube-apiserver (and the finalizer deletes it).
	r = k.do(t, "PATCH", "/apis/stable.example.com/v1/namespaces/default/crontabs/applied-late?fieldManager=late", mustJSON(t, cronTab("applied-late").Object), "Content-Type: application/apply-patch+yaml")
	if r.Code != http.StatusCreated {
		t.Errorf("server-side apply creating a CronTab while the CRD terminates: %d %s, want 201", r.Code, r.Body)
	}
	// Releasing the object lets the CRD go.
	held.SetFinalizers(nil)
	if _, err := crs.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	eventually(t, 15*time.Second, "the CRD to be gone", func() (bool, error) {
		_, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	// Its DELETED event carries its last stored state (the status update
	// that removed the finalizer deleted it instead, as kube's store does).
	for ev := range w.ResultChan() {
		if ev.Type != watch.Deleted {
			continue
		}
		last := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if c := crdCondition(last, apiextensionsv1.Terminating); c == nil || c.Status != apiextensionsv1.ConditionTrue || c.Reason != "InstanceDeletionInProgress" {
			t.Errorf("the deleted CRD's conditions %s, want Terminating True InstanceDeletionInProgress", fmtJSON(last.Status.Conditions))
		}
		return
	}
	t.Error("the watch ended without the CRD's DELETED event")
}

func cronTab(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "stable.example.com/v1",
		"kind":       "CronTab",
		"metadata":   map[string]interface{}{"name": name},
		"spec":       map[string]interface{}{"cronSpec": "* * * * */5", "image": "img", "replicas": int64(1)},
	}}
}

// gadgetCRDYAML exercises the schema features of custom resources.
const gadgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.dyn.example.com
spec:
  group: dyn.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "!has(self.replicas) || self.replicas <= 10"
              message: too many replicas
            - rule: "!has(self.minReplicas) || !has(self.replicas) || self.minReplicas <= self.replicas"
              messageExpression: "'minReplicas (%d) exceeds replicas (%d)'.format([self.minReplicas, self.replicas])"
            - rule: "!has(self.owner) || self.owner != 'root'"
              message: owner may not be root
              reason: FieldValueForbidden
              fieldPath: .owner
            properties:
              replicas:
                type: integer
              minReplicas:
                type: integer
              mode:
                type: string
                default: Auto
              color:
                type: string
              owner:
                type: string
              image:
                type: string
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: image is immutable
              level:
                type: integer
                x-kubernetes-validations:
                - rule: "oldSelf.hasValue() || self < 100"
                  message: a new gadget starts below level 100
                  optionalOldSelf: true
                - rule: "!oldSelf.hasValue() || self >= oldSelf.value()"
                  message: level may not decrease
                  optionalOldSelf: true
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas:
                type: integer
              selector:
                type: string
              phase:
                type: string
`

var gvrGadgets = schema.GroupVersionResource{Group: "dyn.example.com", Version: "v1", Resource: "gadgets"}

func gadget(name string, spec map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "dyn.example.com/v1",
		"kind":       "Gadget",
		"metadata":   map[string]interface{}{"name": name},
		"spec":       spec,
	}}
}

func nested(u *unstructured.Unstructured, path ...string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

func TestCustomResourceSchema(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets"

	t.Run("defaulting", func(t *testing.T) {
		ctx := ctxT(t)
		created, err := gadgets.Create(ctx, gadget("defaulted", map[string]interface{}{"color": "red"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nested(created, "spec", "mode") != "Auto" {
			t.Errorf("spec after create %v, want mode defaulted to Auto", created.Object["spec"])
		}
		unstructured.SetNestedField(created.Object, "Manual", "spec", "mode")
		updated, err := gadgets.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil || nested(updated, "spec", "mode") != "Manual" {
			t.Fatalf("update to Manual: %v %v", err, updated)
		}
		unstructured.RemoveNestedField(updated.Object, "spec", "mode")
		updated, err = gadgets.Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil || nested(updated, "spec", "mode") != "Auto" {
			t.Errorf("update without mode: %v %v, want mode defaulted to Auto", err, updated)
		}
		got, err := gadgets.Get(ctx, "defaulted", metav1.GetOptions{})
		if err != nil || nested(got, "spec", "mode") != "Auto" {
			t.Errorf("get: %v %v", err, got)
		}
	})

	t.Run("pruning", func(t *testing.T) {
		body := func(name string) []byte {
			return []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"` + name + `","lables":{"a":"b"}},"foo":1,` +
				`"spec":{"color":"red","foo":"bar","extra":{"anything":{"goes":true}}}}`)
		}
		// Strict: an error naming every unknown field.
		r := k.do(t, "POST", path+"?fieldValidation=Strict", body("strict"))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if st := r.Status(t); st.Message != `Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "metadata.lables", unknown field "foo", unknown field "spec.foo"` {
			t.Errorf("Strict message %q", st.Message)
		}
		r = k.do(t, "POST", path+"?fieldValidation=Strict", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"strict"},"spec":{"foo":"bar"}}`))
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if want := `Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "spec.foo"`; r.Status(t).Message != want {
			t.Errorf("Strict message %q, want %q", r.Status(t).Message, want)
		}
		// Warn (explicit, and the default): a warning per field, and the
		// fields are dropped.
		for _, q := range []string{"?fieldValidation=Warn", ""} {
			name := "warn" + strings.TrimPrefix(strings.ToLower(q), "?fieldvalidation=")
			r = k.do(t, "POST", path+q, body(name))
			if r.Code != http.StatusCreated {
				t.Fatalf("POST%s: %d %s", q, r.Code, r.Body)
			}
			if got, want := warnings(t, r.Header), []string{`unknown field "metadata.lables"`, `unknown field "foo"`, `unknown field "spec.foo"`}; !reflect.DeepEqual(got, want) {
				t.Errorf("POST%s warnings %q, want %q", q, got, want)
			}
		}
		// Ignore: dropped silently.
		r = k.do(t, "POST", path+"?fieldValidation=Ignore", body("ignore"))
		if r.Code != http.StatusCreated {
			t.Fatalf("POST Ignore: %d %s", r.Code, r.Body)
		}
		if w := r.Header.Values("Warning"); len(w) != 0 {
			t.Errorf("Ignore warnings %q, want none", w)
		}
		for _, name := range []string{"warnwarn", "warn", "ignore"} {
			got, err := gadgets.Get(ctxT(t), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Object["foo"]; ok {
				t.Errorf("%s: unknown top-level field kept", name)
			}
			if _, ok := got.Object["metadata"].(map[string]interface{})["lables"]; ok {
				t.Errorf("%s: unknown metadata field kept", name)
			}
			want := map[string]interface{}{"color": "red", "mode": "Auto", "extra": map[string]interface{}{"anything": map[string]interface{}{"goes": true}}}
			if !reflect.DeepEqual(got.Object["spec"], want) {
				t.Errorf("%s: spec %v, want %v (unknown field pruned, preserved object kept)", name, got.Object["spec"], want)
			}
		}
		// Fields under x-kubernetes-preserve-unknown-fields are not unknown.
		r = k.do(t, "POST", path+"?fieldValidation=Strict", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"preserved"},"spec":{"extra":{"a":{"b":[1,"x"]}}}}`))
		if r.Code != http.StatusCreated || len(r.Header.Values("Warning")) != 0 {
			t.Errorf("Strict POST with preserved fields: %d %q %s", r.Code, r.Header.Values("Warning"), r.Body)
		}
		got, err := gadgets.Get(ctxT(t), "preserved", metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(nested(got, "spec", "extra"), map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{int64(1), "x"}}}) {
			t.Errorf("preserved: %v %v", err, got)
		}
	})

	t.Run("CEL", func(t *testing.T) {
		ctx := ctxT(t)
		const prefix = `Gadget.dyn.example.com "bad" is invalid: `
		// rule + message.
		_, err := gadgets.Create(ctx, gadget("bad", map[string]interface{}{"replicas": int64(11)}), metav1.CreateOptions{})
		expectInvalid(t, err, prefix+`spec: Invalid value: "object": too many replicas`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "object": too many replicas`, Field: "spec"})
		// messageExpression.
		_, err = gadgets.Create(ctx, gadget("bad", map[string]interface{}{"replicas": int64(2), "minReplicas": int64(3)}), metav1.CreateOptions{})
		expectInvalid(t, err, prefix+`spec: Invalid value: "object": minReplicas (3) exceeds replicas (2)`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "object": minReplicas (3) exceeds replicas (2)`, Field: "spec"})
		// reason and fieldPath.
		_, err = gadgets.Create(ctx, gadget("bad", map[string]interface{}{"owner": "root"}), metav1.CreateOptions{})
		expectInvalid(t, err, prefix+`spec.owner: Forbidden: owner may not be root`,
			metav1.StatusCause{Type: metav1.CauseTypeForbidden, Message: `Forbidden: owner may not be root`, Field: "spec.owner"})
		// Two failing rules: two causes, and the message lists both.
		_, err = gadgets.Create(ctx, gadget("bad", map[string]interface{}{"replicas": int64(12), "owner": "root"}), metav1.CreateOptions{})
		expectInvalid(t, err, prefix+`[spec: Invalid value: "object": too many replicas, spec.owner: Forbidden: owner may not be root]`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "object": too many replicas`, Field: "spec"},
			metav1.StatusCause{Type: metav1.CauseTypeForbidden, Message: `Forbidden: owner may not be root`, Field: "spec.owner"})
		// optionalOldSelf: evaluated on create, with no old value.
		_, err = gadgets.Create(ctx, gadget("bad", map[string]interface{}{"level": int64(150)}), metav1.CreateOptions{})
		expectInvalid(t, err, prefix+`spec.level: Invalid value: "integer": a new gadget starts below level 100`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "integer": a new gadget starts below level 100`, Field: "spec.level"})

		// A transition rule holds only on update.
		created, err := gadgets.Create(ctx, gadget("immutable", map[string]interface{}{"image": "a:1", "level": int64(5), "replicas": int64(1)}), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("valid create: %v", err)
		}
		changed := created.DeepCopy()
		unstructured.SetNestedField(changed.Object, "a:2", "spec", "image")
		_, err = gadgets.Update(ctx, changed, metav1.UpdateOptions{})
		expectInvalid(t, err, `Gadget.dyn.example.com "immutable" is invalid: spec.image: Invalid value: "string": image is immutable`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "string": image is immutable`, Field: "spec.image"})
		// With an old value the optionalOldSelf rules compare to it.
		changed = created.DeepCopy()
		unstructured.SetNestedField(changed.Object, int64(150), "spec", "level")
		updated, err := gadgets.Update(ctx, changed, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("raising the level to 150: %v", err)
		}
		unstructured.SetNestedField(updated.Object, int64(3), "spec", "level")
		_, err = gadgets.Update(ctx, updated, metav1.UpdateOptions{})
		expectInvalid(t, err, `Gadget.dyn.example.com "immutable" is invalid: spec.level: Invalid value: "integer": level may not decrease`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "integer": level may not decrease`, Field: "spec.level"})
		// The raw answer is a 422 Status with the details.
		r := k.do(t, "POST", path, mustJSON(t, gadget("raw", map[string]interface{}{"replicas": int64(11)}).Object))
		st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		if st.Details == nil || st.Details.Name != "raw" || st.Details.Group != "dyn.example.com" || st.Details.Kind != "Gadget" {
			t.Errorf("details %s, want name raw, group dyn.example.com, kind Gadget", fmtJSON(st.Details))
		}
	})

	t.Run("status", func(t *testing.T) {
		ctx := ctxT(t)
		obj := gadget("stat", map[string]interface{}{"color": "red", "replicas": int64(1)})
		obj.Object["status"] = map[string]interface{}{"phase": "Set-on-create"}
		created, err := gadgets.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := created.Object["status"]; ok || created.GetGeneration() != 1 {
			t.Errorf("create: status %v generation %d, want no status (dropped) and generation 1", created.Object["status"], created.GetGeneration())
		}
		// /status changes the status only: not spec, not labels.
		upd := created.DeepCopy()
		upd.Object["status"] = map[string]interface{}{"phase": "Ready", "replicas": int64(2), "selector": "app=stat"}
		unstructured.SetNestedField(upd.Object, int64(9), "spec", "replicas")
		upd.SetLabels(map[string]string{"via": "status"})
		st, err := gadgets.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update /status: %v", err)
		}
		if nested(st, "status", "phase") != "Ready" || nested(st, "spec", "replicas") != int64(1) || st.GetLabels()["via"] != "" || st.GetGeneration() != 1 {
			t.Errorf("after /status: status %v spec %v labels %v generation %d; want status set, spec and labels unchanged, generation 1",
				st.Object["status"], st.Object["spec"], st.GetLabels(), st.GetGeneration())
		}
		// The main resource ignores status.
		main := st.DeepCopy()
		main.Object["status"] = map[string]interface{}{"phase": "Hacked"}
		unstructured.SetNestedField(main.Object, "blue", "spec", "color")
		got, err := gadgets.Update(ctx, main, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nested(got, "status", "phase") != "Ready" || nested(got, "spec", "color") != "blue" || got.GetGeneration() != 2 {
			t.Errorf("after main update: status %v color %v generation %d; want status unchanged, color blue, generation 2",
				got.Object["status"], nested(got, "spec", "color"), got.GetGeneration())
		}
		// A metadata-only change leaves the generation.
		got.SetLabels(map[string]string{"via": "main"})
		got, err = gadgets.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil || got.GetGeneration() != 2 || got.GetLabels()["via"] != "main" {
			t.Errorf("label update: %v generation %d labels %v, want generation 2", err, got.GetGeneration(), got.GetLabels())
		}
		// A status-only merge patch through /status.
		patched, err := gadgets.Patch(ctx, "stat", "application/merge-patch+json", []byte(`{"status":{"phase":"Done"}}`), metav1.PatchOptions{}, "status")
		if err != nil || nested(patched, "status", "phase") != "Done" || patched.GetGeneration() != 2 {
			t.Errorf("PATCH /status: %v %v", err, patched)
		}
		// A main-resource patch of status changes nothing there.
		patched, err = gadgets.Patch(ctx, "stat", "application/merge-patch+json", []byte(`{"status":{"phase":"Nope"}}`), metav1.PatchOptions{})
		if err != nil || nested(patched, "status", "phase") != "Done" || patched.GetGeneration() != 2 {
			t.Errorf("PATCH of status through the main resource: %v %v", err, patched)
		}
	})

	t.Run("scale", func(t *testing.T) {
		ctx := ctxT(t)
		if _, err := gadgets.Create(ctx, gadget("scaled", map[string]interface{}{"replicas": int64(3)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := gadgets.Patch(ctx, "scaled", "application/merge-patch+json", []byte(`{"status":{"replicas":2,"selector":"app=scaled"}}`), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		sc, err := gadgets.Get(ctx, "scaled", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		if sc.GetAPIVersion() != "autoscaling/v1" || sc.GetKind() != "Scale" || sc.GetName() != "scaled" || sc.GetNamespace() != "default" ||
			nested(sc, "spec", "replicas") != int64(3) || nested(sc, "status", "replicas") != int64(2) || nested(sc, "status", "selector") != "app=scaled" {
			t.Errorf("GET /scale: %s", fmtJSON(sc.Object))
		}
		unstructured.SetNestedField(sc.Object, int64(7), "spec", "replicas")
		out, err := gadgets.Update(ctx, sc, metav1.UpdateOptions{}, "scale")
		if err != nil {
			t.Fatalf("PUT /scale: %v", err)
		}
		if out.GetKind() != "Scale" || nested(out, "spec", "replicas") != int64(7) || nested(out, "status", "replicas") != int64(2) {
			t.Errorf("PUT /scale answered %s", fmtJSON(out.Object))
		}
		got, err := gadgets.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil || nested(got, "spec", "replicas") != int64(7) || got.GetGeneration() != 2 || nested(got, "status", "replicas") != int64(2) {
			t.Errorf("after PUT /scale: %v %v, want spec.replicas 7, generation 2", err, got)
		}
		// kubectl scale's merge patch; a strategic merge patch is refused,
		// as for every custom resource endpoint.
		if _, err := gadgets.Patch(ctx, "scaled", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{}, "scale"); err != nil {
			t.Errorf("merge patch of /scale: %v", err)
		}
		_, err = gadgets.Patch(ctx, "scaled", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":6}}`), metav1.PatchOptions{}, "scale")
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Errorf("strategic merge patch of /scale: %v, want 415", err)
		}
		// The custom resource's validation holds through /scale.
		unstructured.SetNestedField(out.Object, int64(11), "spec", "replicas")
		_, err = gadgets.Update(ctx, out, metav1.UpdateOptions{}, "scale")
		expectInvalid(t, err, `Gadget.dyn.example.com "scaled" is invalid: spec: Invalid value: "object": too many replicas`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "object": too many replicas`, Field: "spec"})

		// Server-side apply of /scale, as an autoscaler applies replicas
		// that a GitOps tool applied through the resource: a conflict
		// without force; with it, the scaler owns the resource's replicas
		// (managedFields mapped from the Scale's, as kube-apiserver maps
		// them) and the tool no longer does.
		applied := gadget("ssa-scaled", map[string]interface{}{"replicas": int64(3), "color": "red"})
		if _, err := gadgets.Apply(ctx, "ssa-scaled", applied, metav1.ApplyOptions{FieldManager: "gitops"}); err != nil {
			t.Fatal(err)
		}
		scaleConfig := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]interface{}{"name": "ssa-scaled", "namespace": "default"},
			"spec":     map[string]interface{}{"replicas": int64(5)},
		}}
		_, err = gadgets.Apply(ctx, "ssa-scaled", scaleConfig, metav1.ApplyOptions{FieldManager: "scaler"}, "scale")
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "gitops": .spec.replicas`) {
			t.Errorf("apply of /scale against gitops' replicas: %v, want a conflict with gitops on .spec.replicas", err)
		}
		out, err = gadgets.Apply(ctx, "ssa-scaled", scaleConfig, metav1.ApplyOptions{FieldManager: "scaler", Force: true}, "scale")
		if err != nil || out.GetKind() != "Scale" || nested(out, "spec", "replicas") != int64(5) {
			t.Fatalf("forced apply of /scale: %v %v", err, out)
		}
		got, err = gadgets.Get(ctx, "ssa-scaled", metav1.GetOptions{})
		if err != nil || nested(got, "spec", "replicas") != int64(5) {
			t.Fatalf("after the apply of /scale: %v %v", err, got)
		}
		owners := map[string]string{}
		for _, e := range got.GetManagedFields() {
			owners[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = e.APIVersion + " " + string(e.FieldsV1.Raw)
		}
		if o := owners["scaler/Apply/scale"]; o != `dyn.example.com/v1 {"f:spec":{"f:replicas":{}}}` {
			t.Errorf("managedFields %v: want scaler's Apply through scale owning dyn.example.com/v1 spec.replicas", owners)
		}
		if o := owners["gitops/Apply/"]; !strings.Contains(o, `"f:color"`) || strings.Contains(o, `"f:replicas"`) {
			t.Errorf("managedFields %v: want gitops to keep spec.color and lose spec.replicas", owners)
		}
		// A PUT of /scale records an Update through scale.
		sc, err = gadgets.Get(ctx, "ssa-scaled", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedField(sc.Object, int64(6), "spec", "replicas")
		if _, err := gadgets.Update(ctx, sc, metav1.UpdateOptions{FieldManager: "putter"}, "scale"); err != nil {
			t.Fatal(err)
		}
		got, err = gadgets.Get(ctx, "ssa-scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owners = map[string]string{}
		for _, e := range got.GetManagedFields() {
			owners[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = string(e.FieldsV1.Raw)
		}
		if owners["putter/Update/scale"] != `{"f:spec":{"f:replicas":{}}}` || owners["scaler/Apply/scale"] != "" {
			t.Errorf("managedFields %v after a PUT of /scale: want putter's Update through scale owning spec.replicas, the scaler's gone", owners)
		}
	})

	t.Run("selectableFields", func(t *testing.T) {
		ctx := ctxT(t)
		// A namespace of its own: the other subtests' gadgets stay out.
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("sel"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gadgets := k.Dyn.Resource(gvrGadgets).Namespace("sel")
		const path = "/apis/dyn.example.com/v1/namespaces/sel/gadgets"
		for name, color := range map[string]string{"sel-blue": "blue", "sel-red": "red", "sel-blue2": "blue"} {
			if _, err := gadgets.Create(ctx, gadget(name, map[string]interface{}{"color": color}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := gadgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.color=blue"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range list.Items {
			names = append(names, it.GetName())
		}
		if !reflect.DeepEqual(names, []string{"sel-blue", "sel-blue2"}) {
			t.Errorf("list spec.color=blue: %v", names)
		}
		list, err = gadgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.color!=blue,metadata.name=sel-red"})
		if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "sel-red" {
			t.Errorf("list spec.color!=blue,metadata.name=sel-red: %v %v", err, list)
		}
		// A field that is not selectable.
		r := k.do(t, "GET", path+"?fieldSelector=spec.replicas%3D3", nil)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if st := r.Status(t); st.Message != "field label not supported: spec.replicas" {
			t.Errorf("unknown field selector: message %q, want %q", st.Message, "field label not supported: spec.replicas")
		}
		// Watch: objects entering the selection are ADDED, leaving it
		// DELETED (with their last matching state, as the watch cache
		// sends).
		w, err := gadgets.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.color=blue", ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := gadgets.Create(ctx, gadget("sel-green", map[string]interface{}{"color": "green"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := gadgets.Patch(ctx, "sel-red", "application/merge-patch+json", []byte(`{"spec":{"color":"blue"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := gadgets.Patch(ctx, "sel-blue", "application/merge-patch+json", []byte(`{"spec":{"color":"red"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var evs []string
		timeout := time.After(5 * time.Second)
		for len(evs) < 2 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %v", evs)
				}
				u, _ := ev.Object.(*unstructured.Unstructured)
				if u == nil {
					t.Fatalf("watch event %s %T", ev.Type, ev.Object)
				}
				evs = append(evs, string(ev.Type)+" "+u.GetName()+" "+u.Object["spec"].(map[string]interface{})["color"].(string))
			case <-timeout:
				t.Fatalf("watch spec.color=blue: got only %v", evs)
			}
		}
		if want := []string{string(watch.Added) + " sel-red blue", string(watch.Deleted) + " sel-blue blue"}; !reflect.DeepEqual(evs, want) {
			t.Errorf("watch spec.color=blue events %q, want %q", evs, want)
		}
		r = k.do(t, "GET", path+"?watch=true&fieldSelector=spec.owner%3Dx", nil)
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "field label not supported: spec.owner")
	})

	t.Run("namespaces", func(t *testing.T) {
		ctx := ctxT(t)
		r := k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/nope/gadgets", mustJSON(t, gadget("orphan", map[string]interface{}{}).Object))
		st := expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound)
		if st.Message != `namespaces "nope" not found` || st.Details == nil || st.Details.Name != "nope" || st.Details.Kind != "namespaces" {
			t.Errorf("create in a missing namespace: %s", r.Body)
		}
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, newNamespace("gadget-ns"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		inNS := k.Dyn.Resource(gvrGadgets).Namespace("gadget-ns")
		for _, name := range []string{"g1", "g2"} {
			if _, err := inNS.Create(ctx, gadget(name, map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := k.Client.CoreV1().Namespaces().Delete(ctx, "gadget-ns", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "namespace gadget-ns and its gadgets to be gone", func() (bool, error) {
			_, err := k.Client.CoreV1().Namespaces().Get(ctx, "gadget-ns", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		list, err := k.Dyn.Resource(gvrGadgets).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			if it.GetNamespace() == "gadget-ns" {
				t.Errorf("gadget %s/%s outlived its namespace", it.GetNamespace(), it.GetName())
			}
		}
	})
}

// changeGadgetSpecSchema updates the Gadget CRD's schema of spec.
func changeGadgetSpecSchema(t *testing.T, k *kapi, change func(spec *apiextensionsv1.JSONSchemaProps)) {
	t.Helper()
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctxT(t), "gadgets.dyn.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	change(&spec)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if _, err := crds.Update(ctxT(t), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A default added to the schema applies to objects stored before it, when
// they are read.
func TestCustomResourceDefaultOnRead(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	if _, err := gadgets.Create(ctx, gadget("old", map[string]interface{}{"color": "red"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	changeGadgetSpecSchema(t, k, func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Properties["tier"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"standard"`)}}
		// A transition rule on the new field: the old object must carry
		// the default too for an update to pass it.
		spec.XValidations = append(spec.XValidations, apiextensionsv1.ValidationRule{Rule: "self.tier == oldSelf.tier", Message: "tier is immutable"})
	})
	eventually(t, 10*time.Second, "the stored gadget to read with the new default", func() (bool, error) {
		got, err := gadgets.Get(ctx, "old", metav1.GetOptions{})
		return err == nil && nested(got, "spec", "tier") == "standard", err
	})
	list, err := gadgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || nested(&list.Items[0], "spec", "tier") != "standard" {
		t.Errorf("list after the new default: %v %v", err, list)
	}
	// An update decodes the stored object as kube-apiserver does, defaults
	// included: the transition rule holds and, the spec being the same,
	// the generation stays.
	before, err := gadgets.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patched, err := gadgets.Patch(ctx, "old", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("a label patch of an object stored before the new default: %v", err)
	}
	if patched.GetGeneration() != before.GetGeneration() || nested(patched, "spec", "tier") != "standard" {
		t.Errorf("after a label patch: generation %d (before %d), tier %q", patched.GetGeneration(), before.GetGeneration(), nested(patched, "spec", "tier"))
	}
	// A real change of the field still meets the rule.
	_, err = gadgets.Patch(ctx, "old", types.MergePatchType, []byte(`{"spec":{"tier":"premium"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "tier is immutable") {
		t.Errorf("changing tier: %v, want 422 tier is immutable", err)
	}
}

// A default is applied pruned, as kube-apiserver serves a CRD's defaults:
// the unknown fields of an embedded object's metadata (which the CRD's
// validation lets a default hold) never reach an object, whether the
// default is the embedded object's or its parent's.
func TestCustomResourceDefaultsPruned(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: holders.dyn.example.com
spec:
  group: dyn.example.com
  scope: Cluster
  names: {plural: holders, singular: holder, kind: Holder}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          whole:
            type: object
            x-kubernetes-embedded-resource: true
            x-kubernetes-preserve-unknown-fields: true
            default: {apiVersion: foos/v1, kind: Foo, metadata: {name: bar, unknown: x}}
          spanning:
            type: object
            properties:
              embedded:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
            default: {embedded: {apiVersion: foos/v1, kind: Foo, metadata: {name: bar, unknown: x}}}
`))
	holders := k.Dyn.Resource(schema.GroupVersionResource{Group: "dyn.example.com", Version: "v1", Resource: "holders"})
	created, err := holders.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "dyn.example.com/v1", "kind": "Holder", "metadata": map[string]interface{}{"name": "h"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := holders.Get(ctx, "h", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*unstructured.Unstructured{created, got} {
		if want := map[string]interface{}{"name": "bar"}; !reflect.DeepEqual(nested(u, "whole", "metadata"), want) {
			t.Errorf("whole.metadata = %v, want %v", nested(u, "whole", "metadata"), want)
		}
		if want := map[string]interface{}{"name": "bar"}; !reflect.DeepEqual(nested(u, "spanning", "embedded", "metadata"), want) {
			t.Errorf("spanning.embedded.metadata = %v, want %v", nested(u, "spanning", "embedded", "metadata"), want)
		}
	}
}

// A write is stored as it was decoded and prepared, not defaulted again
// as it is converted to the storage version: a /status update through a
// version whose schema has a default the storage version's lacks sets it
// in status (the body was decoded through that version) but not in spec,
// which the status strategy takes from the stored object, as
// kube-apiserver's storage encodes a write without defaulting it.
func TestCustomResourceWriteNotDefaultedForStorage(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dials.dyn.example.com
spec:
  group: dyn.example.com
  scope: Cluster
  names: {plural: dials, singular: dial, kind: Dial}
  versions:
  - name: v1beta1
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {a: {type: string}, c: {type: string, default: C}}}
          status: {type: object, properties: {a: {type: string}, c: {type: string, default: C}}}
  - name: v1beta2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {a: {type: string}, c: {type: string}}}
          status: {type: object, properties: {a: {type: string}, c: {type: string}}}
`))
	gvr := schema.GroupVersionResource{Group: "dyn.example.com", Version: "v1beta2", Resource: "dials"}
	if _, err := k.Dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "dyn.example.com/v1beta2", "kind": "Dial", "metadata": map[string]interface{}{"name": "d"},
		"spec": map[string]interface{}{"a": "x"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr.Version = "v1beta1"
	dials := k.Dyn.Resource(gvr)
	obj, err := dials.Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := nested(obj, "spec", "c"); c != nil {
		t.Fatalf("read through v1beta1: spec.c = %v, want none (the stored object is defaulted by v1beta2's schema)", c)
	}
	obj.Object["status"] = map[string]interface{}{"a": "y"}
	updated, err := dials.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := dials.Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, u := range map[string]*unstructured.Unstructured{"the status update's answer": updated, "a read after it": got} {
		if c := nested(u, "spec", "c"); c != nil {
			t.Errorf("%s: spec.c = %v, want none", what, c)
		}
		if c := nested(u, "status", "c"); c != "C" {
			t.Errorf("%s: status.c = %v, want C", what, c)
		}
	}
}

// A stored object is read as kube-apiserver's storage decodes it: the
// metadata of an embedded object is coerced, its unknown and malformed
// fields dropped. A field that becomes an embedded resource in a schema
// change may hold such metadata from before; the object reads without it,
// and can then be updated.
func TestCustomResourceStoredEmbeddedMetadataCoerced(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: wrappers.dyn.example.com
spec:
  group: dyn.example.com
  scope: Cluster
  names: {plural: wrappers, singular: wrapper, kind: Wrapper}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          inner:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`))
	wrappers := k.Dyn.Resource(schema.GroupVersionResource{Group: "dyn.example.com", Version: "v1", Resource: "wrappers"})
	if _, err := wrappers.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "dyn.example.com/v1", "kind": "Wrapper", "metadata": map[string]interface{}{"name": "w"},
		"inner": map[string]interface{}{"apiVersion": "foo/v1", "kind": "Foo", "metadata": map[string]interface{}{
			"name": "x", "unknown": int64(42), "annotations": map[string]interface{}{"a": int64(42)}, "labels": map[string]interface{}{"l": "v"},
		}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inner := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["inner"]
	inner.XEmbeddedResource = true
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["inner"] = inner
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{"name": "x", "labels": map[string]interface{}{"l": "v"}}
	var got *unstructured.Unstructured
	eventually(t, 10*time.Second, "the stored wrapper to read with inner's metadata coerced", func() (bool, error) {
		var err error
		got, err = wrappers.Get(ctx, "w", metav1.GetOptions{})
		return err == nil && reflect.DeepEqual(nested(got, "inner", "metadata"), want), fmt.Errorf("%v: inner.metadata %v", err, nested(got, "inner", "metadata"))
	})
	got.SetLabels(map[string]string{"touched": "yes"})
	if _, err := wrappers.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating the wrapper as read: %v", err)
	}
}

// Server-side apply follows a CRD's schema change: a field added to the
// schema may be applied, and is owned, once the CRD is updated (the field
// managers of the resource were kept from before the change, so the new
// field was "not declared in schema").
// An explicit null in a server-side apply configuration is not dropped as
// it is from a body: kube-apiserver's field manager hands the applied
// object to validation as merged (defaulted), so a null where the schema
// allows none and sets no default is refused (422), while one where it
// sets a default is defaulted. A merge patch's null still removes the field.
func TestCustomResourceApplyNulls(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	apply := func(name, spec string) (*unstructured.Unstructured, error) {
		body := `{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
		return gadgets.Patch(ctx, name, types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "tester"})
	}
	_, err := apply("nulls", `{"color":null,"replicas":2}`)
	se := (apierrors.APIStatus)(nil)
	if !errors.As(err, &se) || se.Status().Code != http.StatusUnprocessableEntity {
		t.Fatalf("apply creating with color: null: %v, want 422", err)
	}
	if causes := se.Status().Details.Causes; len(causes) == 0 || causes[0].Field != "spec.color" ||
		causes[0].Message != `Invalid value: "null": spec.color in body must be of type string: "null"` {
		t.Errorf("apply creating with color: null: causes %s, want spec.color's type error first", fmtJSON(causes))
	}
	if _, err := apply("nulls", `{"color":"red","replicas":2}`); err != nil {
		t.Fatal(err)
	}
	if _, err := apply("nulls", `{"color":null,"replicas":2}`); !apierrors.IsInvalid(err) {
		t.Errorf("apply updating with color: null: %v, want 422", err)
	}
	got, err := apply("nulls", `{"color":"red","replicas":2,"mode":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := unstructured.NestedString(got.Object, "spec", "mode"); mode != "Auto" {
		t.Errorf("apply with mode: null: mode %q, want the default Auto", mode)
	}
	got, err = gadgets.Patch(ctx, "nulls", types.MergePatchType, []byte(`{"spec":{"color":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch with color: null: %v", err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "color"); found {
		t.Errorf("merge patch with color: null: spec %s, want color removed", fmtJSON(got.Object["spec"]))
	}
}

func TestCustomResourceApplyAfterSchemaChange(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	apply := func(spec string) (*unstructured.Unstructured, error) {
		body := `{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"applied"},"spec":` + spec + `}`
		return gadgets.Patch(ctx, "applied", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "tester"})
	}
	if _, err := apply(`{"color":"red"}`); err != nil {
		t.Fatal(err)
	}
	changeGadgetSpecSchema(t, k, func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Properties["tier"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	})
	var applied *unstructured.Unstructured
	var err error
	eventually(t, 10*time.Second, "an apply of the new field", func() (bool, error) {
		applied, err = apply(`{"color":"red","tier":"gold"}`)
		return err == nil, err
	})
	if nested(applied, "spec", "tier") != "gold" {
		t.Errorf("applied spec.tier %q, want gold", nested(applied, "spec", "tier"))
	}
	owned := false
	for _, m := range applied.GetManagedFields() {
		if m.Manager == "tester" && m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:tier"`) {
			owned = true
		}
	}
	if !owned {
		t.Errorf("tester does not own spec.tier: %v", applied.GetManagedFields())
	}
}

// Finalizer names that are not domain-qualified get kube-apiserver's
// warning on create, and on update for the finalizers the update adds.
func TestCustomResourceFinalizerWarnings(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets"
	body := func(finalizers, rv string) []byte {
		meta := `"name":"fin","finalizers":` + finalizers
		if rv != "" {
			meta += `,"resourceVersion":"` + rv + `"`
		}
		return []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{` + meta + `},"spec":{"color":"red"}}`)
	}
	r := k.do(t, "POST", path, body(`["bad","example.com/ok"]`, ""))
	if r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	want := `299 - "metadata.finalizers: \"bad\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"`
	if got := r.Header.Values("Warning"); len(got) != 1 || got[0] != want {
		t.Errorf("create warnings %q, want [%s]", got, want)
	}
	var created metav1.PartialObjectMetadata
	if err := json.Unmarshal(r.Body, &created); err != nil {
		t.Fatal(err)
	}
	r = k.do(t, "PUT", path+"/fin", body(`["bad","example.com/ok","also.bad"]`, created.ResourceVersion))
	if r.Code != http.StatusOK {
		t.Fatalf("update: %d %s", r.Code, r.Body)
	}
	want = `299 - "metadata.finalizers: \"also.bad\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"`
	if got := r.Header.Values("Warning"); len(got) != 1 || got[0] != want {
		t.Errorf("update warnings %q, want only the added finalizer's [%s]", got, want)
	}
}

// An explicit null where the schema allows none is dropped, or defaulted
// where the schema has a default, as kube-apiserver decodes it (Helm
// renders empty values as null).
func TestCustomResourceNulls(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	r := k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/default/gadgets", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"nulls"},"spec":{"color":null,"mode":null}}`))
	mustCode(t, "create with nulls", r, http.StatusCreated)
	spec, _ := decodeObj(t, r).Object["spec"].(map[string]interface{})
	if _, ok := spec["color"]; ok || spec["mode"] != "Auto" {
		t.Errorf("spec %v, want color dropped and mode defaulted to Auto", spec)
	}
}

// Bodies that are not the endpoint's custom resource get kube-apiserver's
// answers: another kind is invalid (422) under the body's kind; no kind, or
// metadata that does not decode, is a 400.
func TestCustomResourceBodyErrors(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets"
	r := k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Widget","metadata":{"name":"wrong"},"spec":{"color":"red"}}`))
	st := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Widget.dyn.example.com "wrong" is invalid: kind: Invalid value: "Widget": must be Gadget`)
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "kind" {
		t.Errorf("details %+v, want one cause on field kind", st.Details)
	}
	if g := k.do(t, "GET", path+"/wrong", nil); g.Code != http.StatusNotFound {
		t.Errorf("the object was stored: %d", g.Code)
	}
	// A kind that is not a string is read as kube reads a body's type
	// first: unrecognized.
	r = k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":5,"metadata":{"name":"five"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Gadget): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string")
	// So is one given twice, the string last; and one under another
	// case of its name, which that reading matches too, even where the
	// schema keeps unknown fields.
	r = k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":5,"kind":"Gadget","metadata":{"name":"twice"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Gadget): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string")
	open := newCRD("opens", "dyn.example.com")
	open.Spec.Versions[0].Schema.OpenAPIV3Schema.XPreserveUnknownFields = ptrTo(true)
	createCRD(t, k, open)
	r = k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/default/opens", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Open","KIND":5,"metadata":{"name":"cased"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Open): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string")
	r = k.do(t, "POST", "/apis/dyn.example.com/v1/namespaces/default/opens", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Open","metadata":{"name":"plain"},"Other":5}`))
	mustCode(t, "create with an unknown field kept", r, http.StatusCreated)
	// Another kind is not pruned (kube prunes only the CRD's kind): no
	// unknown-field error before the kind's.
	r = k.do(t, "POST", path+"?fieldValidation=Strict", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Widget","metadata":{"name":"wrong"},"spec":{"bogus":1}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `must be Gadget`)
	// Without a kind, the body does not decode as a custom resource.
	noKind := `{"apiVersion":"dyn.example.com/v1","metadata":{"name":"nokind"}}`
	r = k.do(t, "POST", path, []byte(noKind))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
		`the object provided is unrecognized (must be of type Gadget): Object 'Kind' is missing in '`+noKind+`' ({"apiVersion":"dyn.example.com ...)`)
	// Sent as YAML, the JSON it converts to is quoted, and the YAML as
	// sent summarized, in hex as kube-apiserver summarizes a body that is
	// not a JSON object.
	noKindYAML := "apiVersion: dyn.example.com/v1\nmetadata:\n  name: nokind\n"
	r = k.do(t, "POST", path, []byte(noKindYAML), "Content-Type: application/yaml")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
		`the object provided is unrecognized (must be of type Gadget): Object 'Kind' is missing in '`+noKind+`' (`+hex.EncodeToString([]byte(noKindYAML)[:30])+` ...)`)
	// A patch that removes the kind is an invalid patch.
	mustCode(t, "create", k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"kinded"}}`)), http.StatusCreated)
	r = k.do(t, "PATCH", path+"/kinded", []byte(`{"kind":null}`), "Content-Type: application/merge-patch+json")
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `patch: Invalid value: "{\"apiVersion\":\"dyn.example.com/v1\"`, `Object 'Kind' is missing in '{"apiVersion":"dyn.example.com/v1"`)
	r = k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"badmeta","labels":"x"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest,
		`Gadget in version "v1" cannot be handled as a Gadget: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string`)
}

// perVersionCRDYAML gives its versions different subresources and
// selectable fields: v1 (storage) status, scale and spec.color; v2 none;
// v3 status and spec.size. (Their schemas differ: selectable fields per
// version need schemas per version.)
const perVersionCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: parts.pv.example.com
spec:
  group: pv.example.com
  scope: Namespaced
  names: {plural: parts, singular: part, kind: Part}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.color}]
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        description: a part (v1)
        properties: &properties
          spec: {type: object, properties: {color: {type: string}, size: {type: integer}, replicas: {type: integer}}}
          status: {type: object, properties: {replicas: {type: integer}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, description: a part (v2), properties: *properties}}
  - name: v3
    served: true
    storage: false
    selectableFields: [{jsonPath: .spec.size}]
    subresources:
      status: {}
    schema: {openAPIV3Schema: {type: object, description: a part (v3), properties: *properties}}
`

// Each version serves its own subresources and selectable fields, as
// kube-apiserver decides them per request version.
func TestCustomResourcePerVersionSubresources(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, perVersionCRDYAML))
	path := func(v string) string { return "/apis/pv.example.com/" + v + "/namespaces/default/parts" }
	body := func(v, name string) []byte {
		return []byte(`{"apiVersion":"pv.example.com/` + v + `","kind":"Part","metadata":{"name":"` + name + `"},"spec":{"color":"red","size":3,"replicas":1},"status":{"replicas":5}}`)
	}
	// Status is the subresource's in v1 and v3: a create drops it; not
	// in v2, where the main resource writes it.
	for v, keeps := range map[string]bool{"v1": false, "v2": true, "v3": false} {
		r := k.do(t, "POST", path(v), body(v, "p-"+v))
		if r.Code != http.StatusCreated {
			t.Fatalf("create through %s: %d %s", v, r.Code, r.Body)
		}
		if got := nested(decodeObj(t, r), "status", "replicas") != nil; got != keeps {
			t.Errorf("create through %s kept status: %v, want %v", v, got, keeps)
		}
	}
	for _, tc := range []struct {
		v, sub string
		code   int
	}{
		{"v1", "status", http.StatusOK}, {"v1", "scale", http.StatusOK},
		{"v2", "status", http.StatusNotFound}, {"v2", "scale", http.StatusNotFound},
		{"v3", "status", http.StatusOK}, {"v3", "scale", http.StatusNotFound},
	} {
		if r := k.do(t, "GET", path(tc.v)+"/p-v1/"+tc.sub, nil); r.Code != tc.code {
			t.Errorf("GET %s /%s: %d, want %d", tc.v, tc.sub, r.Code, tc.code)
		}
	}
	// An unserved subresource is the object's NotFound; without the
	// namespace a namespaced kind's path is none kube's handler serves.
	expectStatus(t, k.do(t, "GET", path("v2")+"/p-v1/status", nil), http.StatusNotFound, metav1.StatusReasonNotFound, `parts.pv.example.com "p-v1" not found`)
	expectPlainNotFound(t, k.do(t, "GET", "/apis/pv.example.com/v2/parts/p-v1/status", nil))
	for v, want := range map[string][]string{"v1": {"parts", "parts/scale", "parts/status"}, "v2": {"parts"}, "v3": {"parts", "parts/status"}} {
		var list metav1.APIResourceList
		decodeInto(t, k.do(t, "GET", "/apis/pv.example.com/"+v, nil), &list)
		var got []string
		for _, r := range list.APIResources {
			got = append(got, r.Name)
		}
		if !reflect.DeepEqual(sortedCopy(got), want) {
			t.Errorf("discovery of %s: %v, want %v", v, got, want)
		}
	}
	for _, tc := range []struct {
		v, selector string
		code        int
	}{
		{"v1", "spec.color=red", http.StatusOK}, {"v1", "spec.size=3", http.StatusBadRequest},
		{"v2", "spec.color=red", http.StatusBadRequest},
		{"v3", "spec.size=3", http.StatusOK}, {"v3", "spec.color=red", http.StatusBadRequest},
	} {
		r := k.do(t, "GET", path(tc.v)+"?fieldSelector="+tc.selector, nil)
		if r.Code != tc.code {
			t.Errorf("list %s with %s: %d %.200s, want %d", tc.v, tc.selector, r.Code, r.Body, tc.code)
		}
		if tc.code == http.StatusOK {
			var list unstructured.UnstructuredList
			if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Items) != 3 {
				t.Errorf("list %s with %s: %d items (%v), want all 3", tc.v, tc.selector, len(list.Items), err)
			}
		}
	}
}

// HEAD on a custom resource is a get (or a list) without a body, a POST to
// an object's path a create, and PUT or PATCH of its collection a 400, as
// kube-apiserver's custom resource handler answers them; the built-in
// kinds have no HEAD and no POST to an object's path (405).
func TestCustomResourceHead(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets"
	mustCode(t, "create", k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"h"},"spec":{"color":"red"}}`)), http.StatusCreated)
	for p, code := range map[string]int{path + "/h": http.StatusOK, path: http.StatusOK, path + "/missing": http.StatusNotFound, "/api/v1/namespaces/default": http.StatusMethodNotAllowed} {
		if r := k.do(t, "HEAD", p, nil); r.Code != code || len(r.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes, want %d and none", p, r.Code, len(r.Body), code)
		}
	}
	// An update of the collection has no name to update.
	for _, m := range []string{"PUT", "PATCH"} {
		r := k.do(t, m, path, []byte(`{}`), "Content-Type: application/merge-patch+json")
		expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "name must be provided")
	}
	// A POST to an object's path is a create of the object the body names
	// (kube's handler takes any POST as a create); a built-in kind's 405.
	r := k.do(t, "POST", path+"/elsewhere", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"posted"},"spec":{"color":"red"}}`))
	if r.Code != http.StatusCreated || decodeObj(t, r).GetName() != "posted" {
		t.Errorf("POST to an object's path: %d %.200s, want 201 creating posted", r.Code, r.Body)
	}
	mustCode(t, "GET posted", k.do(t, "GET", path+"/posted", nil), http.StatusOK)
	mustCode(t, "POST to a namespace's path", k.do(t, "POST", "/api/v1/namespaces/default", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`)), http.StatusMethodNotAllowed)
}

// A cluster-scoped custom resource offers metadata.name to field
// selectors, not metadata.namespace (kube's converter refuses the label).
func TestClusterScopedCustomResourceFieldSelectors(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	crd := crdFromYAML(t, gadgetCRDYAML)
	crd.Name, crd.Spec.Group, crd.Spec.Scope = "gadgets.cluster.example.com", "cluster.example.com", apiextensionsv1.ClusterScoped
	crd.Spec.Versions[0].SelectableFields = nil
	createCRD(t, k, crd)
	const path = "/apis/cluster.example.com/v1/gadgets"
	if r := k.do(t, "POST", path, []byte(`{"apiVersion":"cluster.example.com/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"color":"red"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	r := k.do(t, "GET", path+"?fieldSelector=metadata.namespace%3Dx", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "field label not supported: metadata.namespace")
	r = k.do(t, "GET", path+"?fieldSelector=metadata.name%3Dg1", nil)
	var list unstructured.UnstructuredList
	if err := json.Unmarshal(r.Body, &list); r.Code != http.StatusOK || err != nil || len(list.Items) != 1 {
		t.Errorf("list by metadata.name: %d %v %s", r.Code, err, r.Body)
	}
}

// widgetVersionsCRDYAML serves v1 (storage), v1beta1 (deprecated, with a
// warning text) and v1alpha1 (deprecated, default text), listed out of
// order.
const widgetVersionsCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ver.example.com
spec:
  group: ver.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  conversion:
    strategy: None
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "ver.example.com/v1beta1 Widget is deprecated; use ver.example.com/v1"
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
`

func TestCustomResourceVersions(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, widgetVersionsCRDYAML))
	const betaWarning = "ver.example.com/v1beta1 Widget is deprecated; use ver.example.com/v1"
	base := "/apis/ver.example.com/"

	r := k.do(t, "POST", base+"v1beta1/namespaces/default/widgets",
		[]byte(`{"apiVersion":"ver.example.com/v1beta1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}`))
	if r.Code != http.StatusCreated {
		t.Fatalf("POST through v1beta1: %d %s", r.Code, r.Body)
	}
	if got := warnings(t, r.Header); !reflect.DeepEqual(got, []string{betaWarning}) {
		t.Errorf("POST v1beta1 warnings %q, want [%q]", got, betaWarning)
	}
	var created unstructured.Unstructured
	if err := created.UnmarshalJSON(r.Body); err != nil || created.GetAPIVersion() != "ver.example.com/v1beta1" {
		t.Errorf("POST v1beta1 answered %s", r.Body)
	}

	r = k.do(t, "GET", base+"v1/namespaces/default/widgets/w", nil)
	var got unstructured.Unstructured
	if err := got.UnmarshalJSON(r.Body); err != nil || r.Code != http.StatusOK {
		t.Fatalf("GET v1: %d %s", r.Code, r.Body)
	}
	if got.GetAPIVersion() != "ver.example.com/v1" || got.GetKind() != "Widget" || nested(&got, "spec", "size") != int64(3) || got.GetUID() != created.GetUID() {
		t.Errorf("GET v1: %s", r.Body)
	}
	if w := warnings(t, r.Header); len(w) != 0 {
		t.Errorf("GET v1 warnings %q, want none", w)
	}
	for _, p := range []string{"v1beta1/namespaces/default/widgets/w", "v1beta1/namespaces/default/widgets", "v1beta1/widgets"} {
		r = k.do(t, "GET", base+p, nil)
		if r.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, r.Code, r.Body)
		}
		if got := warnings(t, r.Header); !reflect.DeepEqual(got, []string{betaWarning}) {
			t.Errorf("GET %s warnings %q, want [%q]", p, got, betaWarning)
		}
	}
	// A subresource the version does not serve: NotFound, with the warning.
	r = k.do(t, "GET", base+"v1beta1/namespaces/default/widgets/w/status", nil)
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, `widgets.ver.example.com "w" not found`)
	if got := warnings(t, r.Header); !reflect.DeepEqual(got, []string{betaWarning}) {
		t.Errorf("GET v1beta1 widgets/w/status warnings %q, want [%q]", got, betaWarning)
	}
	r = k.do(t, "GET", base+"v1alpha1/namespaces/default/widgets/w", nil)
	if got := warnings(t, r.Header); !reflect.DeepEqual(got, []string{"ver.example.com/v1alpha1 Widget is deprecated; use ver.example.com/v1 Widget"}) {
		t.Errorf("GET v1alpha1 warnings %q, want the default text", got)
	}
	if err := got.UnmarshalJSON(r.Body); err != nil || got.GetAPIVersion() != "ver.example.com/v1alpha1" {
		t.Errorf("GET v1alpha1: %d %s", r.Code, r.Body)
	}

	// Discovery orders the versions as kube-apiserver does: GA, beta,
	// alpha; the preferred version is the first.
	var g metav1.APIGroup
	decodeInto(t, k.do(t, "GET", "/apis/ver.example.com", nil), &g)
	if want := []string{"ver.example.com/v1", "ver.example.com/v1beta1", "ver.example.com/v1alpha1"}; !reflect.DeepEqual(groupVersions(g), want) {
		t.Errorf("/apis/ver.example.com versions %v, want %v", groupVersions(g), want)
	}
	if g.PreferredVersion.GroupVersion != "ver.example.com/v1" || g.PreferredVersion.Version != "v1" {
		t.Errorf("preferredVersion %+v, want v1", g.PreferredVersion)
	}
	var groups metav1.APIGroupList
	decodeInto(t, k.do(t, "GET", "/apis", nil), &groups)
	found := false
	for _, gr := range groups.Groups {
		if gr.Name == "ver.example.com" {
			found = true
			if !reflect.DeepEqual(groupVersions(gr), groupVersions(g)) || gr.PreferredVersion.Version != "v1" {
				t.Errorf("/apis entry %+v differs from /apis/ver.example.com", gr)
			}
		}
	}
	if !found {
		t.Errorf("/apis does not list ver.example.com")
	}
	crd, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctxT(t), "widgets.ver.example.com", metav1.GetOptions{})
	if err != nil || !reflect.DeepEqual(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions: %v %v, want [v1]", err, crd.Status.StoredVersions)
	}
}

// An update is checked against every object's metadata rules as well as
// the kind's, as kube-apiserver's BeforeUpdate checks it: finalizer names
// and their combinations, generateName.
func TestCustomResourceUpdateMetadataRules(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	gadgets := k.Dyn.Resource(gvrGadgets).Namespace("default")
	if _, err := gadgets.Create(ctx, gadget("meta", map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for patch, want := range map[string]string{
		`{"metadata":{"finalizers":["bad finalizer"]}}`:               `metadata.finalizers: Invalid value: "bad finalizer"`,
		`{"metadata":{"finalizers":["orphan","foregroundDeletion"]}}`: "finalizer orphan and foregroundDeletion cannot be both set",
		`{"metadata":{"generateName":"x/y%"}}`:                        `metadata.generateName: Invalid value: "x/y%": may not contain '/'`,
	} {
		_, err := gadgets.Patch(ctx, "meta", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("merge patch %s: %v, want Invalid with %q", patch, err, want)
		}
	}
}

// A /scale body's unknown fields are warned of under fieldValidation=Warn
// (the default) and refused under Strict, as kube-apiserver decodes it.
func TestCustomResourceScaleFieldValidation(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, gadgetCRDYAML))
	const path = "/apis/dyn.example.com/v1/namespaces/default/gadgets"
	mustCode(t, "create", k.do(t, "POST", path, []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"s"},"spec":{"replicas":1}}`)), http.StatusCreated)
	body := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","namespace":"default"},"spec":{"replicas":2,"bogus":1}}`)
	r := k.do(t, "PUT", path+"/s/scale", body)
	if r.Code != http.StatusOK || !strings.Contains(r.Header.Get("Warning"), `unknown field \"spec.bogus\"`) {
		t.Errorf("PUT /scale with an unknown field: %d, Warning %q, want 200 and the field warned", r.Code, r.Header.Values("Warning"))
	}
	// Refused under Strict, in the words of kube's typer (below).
	r = k.do(t, "PUT", path+"/s/scale?fieldValidation=Strict", body)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `no kind is registered for the type v1.Scale`)

	// As kube-apiserver's scale endpoint: a PUT's Scale that does not
	// decode, whatever the reason, is the error of the typer its update
	// handler words a decoding error with (the custom resource's, which
	// knows no Scale); negative replicas are refused by the custom
	// resource's validation, and other verbs name the resource.
	const undecodable = `no kind is registered for the type v1.Scale in scheme "k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go:725"`
	r = k.do(t, "PUT", path+"/s/scale", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","namespace":"default"},"spec":{"replicas":"5"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, undecodable)
	r = k.do(t, "PUT", path+"/s/scale", []byte("a: ["), "Content-Type: application/yaml")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, undecodable)
	r = k.do(t, "PUT", path+"/s/scale", []byte("k8s\x00garbage"), "Content-Type: application/vnd.kubernetes.protobuf")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, undecodable)
	r = k.do(t, "PUT", path+"/s/scale", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","namespace":"default"},"spec":{"replicas":-1}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `Gadget.dyn.example.com "s" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`)
	r = k.do(t, "DELETE", path+"/s/scale", nil)
	expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, `delete is not supported on resources of kind "gadgets.dyn.example.com"`)

	// Unknown fields of a Strict PUT, the same.
	r = k.do(t, "PUT", path+"/s/scale?fieldValidation=Strict", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":2,"bogus":1},"extra":2}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, undecodable)
	// The endpoint takes an autoscaling/v1 Scale only.
	r = k.do(t, "PUT", path+"/s/scale", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{"name":"s"},"spec":{"replicas":2}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, undecodable)
	// A PUT's uid is a precondition; its name must be the URL's.
	r = k.do(t, "PUT", path+"/s/scale", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","uid":"not-the-uid"},"spec":{"replicas":2}}`))
	expectStatus(t, r, http.StatusConflict, metav1.StatusReasonConflict, `Operation cannot be fulfilled on gadgets.dyn.example.com "s": Precondition failed: UID in precondition: not-the-uid, UID in object meta: `)
	r = k.do(t, "PUT", path+"/s/scale", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{},"spec":{"replicas":2}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `the name of the object (s based on URL) was undeterminable: name must be provided`)
	r = k.do(t, "PUT", path+"/s", []byte(`{"apiVersion":"dyn.example.com/v1","kind":"Gadget","metadata":{},"spec":{"replicas":2}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `the name of the object (s based on URL) was undeterminable: name must be provided`)
	// A patch whose result does not decode (strictly) is an invalid patch.
	for _, c := range []struct{ query, patch, want string }{
		{"", `{"spec":{"replicas":"3"}}`, `json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32`},
		{"?fieldValidation=Strict", `{"spec":{"replicas":3,"foo":1}}`, `strict decoding error: unknown field "spec.foo"`},
	} {
		r = k.do(t, "PATCH", path+"/s/scale"+c.query, []byte(c.patch), "Content-Type: application/merge-patch+json")
		status := expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, c.want)
		if status.Details == nil || len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != "patch" {
			t.Errorf("PATCH /scale %s: details %+v, want one cause on the field patch", c.patch, status.Details)
		}
	}
	// A PATCH's options are PatchOptions, every error in one Invalid, as
	// kube-apiserver's patch handler validates them (kapi checked them as
	// UpdateOptions first, one error at a time).
	r = k.do(t, "PATCH", path+"/s/scale?dryRun=Bogus&force=true", []byte(`{"spec":{"replicas":3}}`), "Content-Type: application/merge-patch+json")
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		`PatchOptions.meta.k8s.io "" is invalid: [force: Forbidden: may not be specified for non-apply patch, dryRun: Unsupported value: []string{"Bogus"}: supported values: "All"]`)
}

// Field selectors read a selectable field from the object as it is served
// in the request's version: with a default the stored object lacks, the
// object is selected by the defaulted value, as kube-apiserver's storage
// filters what it decoded.
func TestSelectableFieldsReadAsServed(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crd := crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sels.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sels, singular: sel, kind: Sel}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.color}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
`)
	createCRD(t, k, crd)
	const path = "/apis/example.com/v1/namespaces/default/sels"
	mustCode(t, "create s1", k.do(t, "POST", path, []byte(`{"apiVersion":"example.com/v1","kind":"Sel","metadata":{"name":"s1"},"spec":{}}`)), http.StatusCreated)
	// The schema now defaults spec.color: s1 is served red.
	stored, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	color := stored.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"]
	color.Default = &apiextensionsv1.JSON{Raw: []byte(`"red"`)}
	stored.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"] = color
	if _, err := k.Ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "s1 served red", func() (bool, error) {
		return nested(decodeObj(t, k.do(t, "GET", path+"/s1", nil)), "spec", "color") == "red", nil
	})
	var list unstructured.UnstructuredList
	if err := json.Unmarshal(k.do(t, "GET", path+"?fieldSelector=spec.color%3Dred", nil).Body, &list); err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "s1" {
		t.Errorf("list with spec.color=red: %v %d items, want s1", err, len(list.Items))
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "sels"}
	w, err := k.Dyn.Resource(gvr).Namespace("default").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.color=red", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if obj, ok := ev.Object.(*unstructured.Unstructured); ev.Type != "ADDED" || !ok || obj.GetName() != "s1" {
			t.Errorf("watch with spec.color=red: %s %v, want ADDED s1", ev.Type, ev.Object)
		}
	case <-time.After(5 * time.Second):
		t.Error("watch with spec.color=red: no event for s1")
	}
}

// An Established CRD whose changed names are refused (a short name another
// CRD of the group has) is still served, under its accepted names and with
// its current spec, and after a restart too: kube-apiserver serves a CRD
// that is Established or has its names accepted.
func TestCustomResourceEstablishedServedThroughNameConflict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := startKapiIn(t, dir)
	ctx := ctxT(t)
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	createCRD(t, k, crdFromYAML(t, cronTabCRDYAML)) // short name ct
	widgets := crdFromYAML(t, strings.NewReplacer(
		"name: crontabs.stable.example.com", "name: widgets.stable.example.com",
		"plural: crontabs", "plural: widgets",
		"singular: crontab", "singular: widget",
		"kind: CronTab", "kind: Widget",
		"- ct\n", "- wd\n",
	).Replace(cronTabCRDYAML))
	createCRD(t, k, widgets)
	gvr := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "widgets"}
	if _, err := k.Dyn.Resource(gvr).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "stable.example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "w1"}, "spec": map[string]interface{}{"replicas": int64(50)},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Ask for the CronTab's short name, and cap spec.replicas.
	patch := `[{"op":"add","path":"/spec/names/shortNames/-","value":"ct"},
{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/replicas/maximum","value":5}]`
	if _, err := crds.Patch(ctx, "widgets.stable.example.com", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitCRDCondition(t, k, "widgets.stable.example.com", apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse)
	expectCondition(t, got, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ShortNamesConflict", `"ct" is already in use`)
	expectCondition(t, got, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
	capped := func(k *kapi) func() (bool, error) {
		return func() (bool, error) {
			r := k.do(t, "PATCH", "/apis/stable.example.com/v1/namespaces/default/widgets/w1", []byte(`{"spec":{"replicas":60}}`), "Content-Type: application/merge-patch+json")
			return r.Code == http.StatusUnprocessableEntity && strings.Contains(string(r.Body), "should be less than or equal to 5"), fmt.Errorf("PATCH w1: %d %.300s", r.Code, r.Body)
		}
	}
	eventually(t, 10*time.Second, "the widgets to be served with the new schema", capped(k))
	k.Stop(t)
	k = startKapiIn(t, dir)
	eventually(t, 10*time.Second, "the widgets to be served after a restart", capped(k))
	if r := k.do(t, "GET", "/apis/stable.example.com/v1/namespaces/default/widgets/w1", nil); r.Code != http.StatusOK {
		t.Errorf("GET w1 after a restart: %d %.300s", r.Code, r.Body)
	}
}

// A /scale read of an object whose replicas field holds another type
// answers the field accessor's error as it is, a 500 without a reason, as
// kube-apiserver's scale storage returns it.
func TestCustomResourceScaleOfWrongType(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: knobs.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: knobs, singular: knob, kind: Knob}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`))
	// v2 has no status subresource: its writes set the status.
	mustCode(t, "create", k.do(t, "POST", "/apis/example.com/v2/namespaces/default/knobs",
		[]byte(`{"apiVersion":"example.com/v2","kind":"Knob","metadata":{"name":"k"},"spec":{"replicas":1},"status":{"replicas":"x"}}`)), http.StatusCreated)
	const want = ".status.replicas accessor error: x is of the type string, expected int64"
	for _, r := range []httpResult{
		k.do(t, "GET", "/apis/example.com/v1/namespaces/default/knobs/k/scale", nil),
		k.do(t, "PATCH", "/apis/example.com/v1/namespaces/default/knobs/k/scale", []byte(`{"spec":{"replicas":2}}`), "Content-Type: application/merge-patch+json"),
	} {
		var st metav1.Status
		if err := json.Unmarshal(r.Body, &st); err != nil || r.Code != http.StatusInternalServerError || st.Reason != "" || st.Message != want {
			t.Errorf("/scale of a string status.replicas: %d %s, want 500 with no reason and %q", r.Code, r.Body, want)
		}
	}
}

// A /scale get reads its custom resource as a get of it does, from
// kube-apiserver's watch cache when it names a resourceVersion: "0" or an
// older one is the current Scale, a newer one than the server's is waited
// for then a 504, a malformed one is the cache's parser's error (a 400
// here, kube's 500). kapi read the current Scale whatever was asked.
func TestCustomResourceScaleGetResourceVersion(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createScalable(t, k, "scalerv.example.com")
	const p = "/apis/scalerv.example.com/v1/namespaces/default/pbscales/one/scale"
	for _, rv := range []string{"0", "1"} {
		r := k.do(t, "GET", p+"?resourceVersion="+rv, nil)
		if r.Code != http.StatusOK || !strings.Contains(string(r.Body), `"replicas":2`) {
			t.Errorf("/scale ?resourceVersion=%s: %d %s, want the current Scale", rv, r.Code, r.Body)
		}
	}
	r := k.do(t, "GET", p+"?resourceVersion=999999", nil)
	expectStatus(t, r, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Too large resource version: 999999")
	const want = `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	r = k.do(t, "GET", p+"?resourceVersion=abc", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
	r = k.do(t, "GET", p+"?export=true", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the export parameter, deprecated since v1.14, is no longer supported")
}

// A deletecollection of CRDs deletes every CRD its selector matches and no
// other (kube's CRD conformance test "listing custom resource definition
// objects works"): each CRD's DELETE takes its own UID as its precondition,
// which must not be the next item's.
func TestCustomResourceDefinitionDeleteCollection(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	ctx := ctxT(t)
	crds := k.Ext.ApiextensionsV1().CustomResourceDefinitions()
	for _, plural := range []string{"dcones", "dctwos", "dcthrees", "dckeeps"} {
		crd := newCRD(plural, "dc.example.com")
		if plural != "dckeeps" {
			crd.Labels = map[string]string{"e2e-list-test": "x"}
		}
		createCRD(t, k, crd)
	}
	sel := metav1.ListOptions{LabelSelector: "e2e-list-test=x"}
	if err := crds.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatalf("deletecollection of the labelled CRDs: %v", err)
	}
	eventually(t, 10*time.Second, "the labelled CRDs gone", func() (bool, error) {
		list, err := crds.List(ctx, sel)
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, fmt.Errorf("%d left", len(list.Items))
	})
	if _, err := crds.Get(ctx, "dckeeps.dc.example.com", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD without the label: %v, want it kept", err)
	}
}

// fieldValidation on custom resources as kube's field validation
// integration test checks it: a YAML body's duplicate keys come first (one
// warning a line under Warn), then the unknown fields of metadata, those
// pruned (none under x-kubernetes-preserve-unknown-fields, but still in a
// typed list item below it), then those of an embedded object's metadata;
// a create whose resourceVersion is not a revision is stored.
func TestCustomResourceFieldValidationYAMLEmbedded(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	createCRD(t, k, crdFromYAML(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: probes.fv.example.com
spec:
  group: fv.example.com
  scope: Cluster
  names: {plural: probes, singular: probe, kind: Probe}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              size: {type: string}
              items:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [key]
                items:
                  type: object
                  required: [key]
                  properties:
                    key: {type: string}
                    count: {type: integer}
              inner:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  metadata: {type: object}
`))
	path := "/apis/fv.example.com/v1/probes"
	// A resourceVersion that is not a number is dropped, as kube's storage
	// drops it.
	r := k.do(t, "POST", path, []byte(`{"apiVersion":"fv.example.com/v1","kind":"Probe","metadata":{"name":"p","resourceVersion":"not-a-number"},"spec":{"size":"s"}}`))
	if r.Code != http.StatusCreated {
		t.Fatalf("create with a resourceVersion that is not a revision: %d %s", r.Code, r.Body)
	}
	var created unstructured.Unstructured
	if err := created.UnmarshalJSON(r.Body); err != nil || rvInt(t, created.GetResourceVersion()) <= 0 {
		t.Fatalf("created: %v %s", err, r.Body)
	}
	body := `apiVersion: fv.example.com/v1
kind: Probe
metadata:
  name: p
  name: p
  resourceVersion: "` + created.GetResourceVersion() + `"
  colour: blue
spec:
  size: s
  size: m
  other: kept
  items:
  - key: a
    count: 1
    count: 2
    weight: 3
  inner:
    apiVersion: v1
    kind: Thing
    metadata:
      name: x
      owner: y
`
	lines := []string{`line 5: key "name" already set in map`, `line 10: key "size" already set in map`, `line 15: key "count" already set in map`}
	unknown := []string{`unknown field "metadata.colour"`, `unknown field "spec.items[0].weight"`, `unknown field "spec.inner.metadata.owner"`}
	r = k.do(t, "PUT", path+"/p?fieldValidation=Strict", []byte(body), "Content-Type: application/yaml")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if got, want := r.Status(t).Message, "Probe in version \"v1\" cannot be handled as a Probe: strict decoding error: yaml: unmarshal errors:\n  "+
		strings.Join(lines, "\n  ")+", "+strings.Join(unknown, ", "); got != want {
		t.Errorf("Strict PUT:\n got  %q\n want %q", got, want)
	}
	r = k.do(t, "PUT", path+"/p", []byte(body), "Content-Type: application/yaml")
	if r.Code != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.Code, r.Body)
	}
	if got, want := warnings(t, r.Header), append(lines, unknown...); !reflect.DeepEqual(got, want) {
		t.Errorf("PUT warnings:\n got  %q\n want %q", got, want)
	}
	var updated unstructured.Unstructured
	if err := updated.UnmarshalJSON(r.Body); err != nil {
		t.Fatal(err)
	}
	if want := map[string]interface{}{"size": "m", "other": "kept", "items": []interface{}{map[string]interface{}{"key": "a", "count": int64(2)}},
		"inner": map[string]interface{}{"apiVersion": "v1", "kind": "Thing", "metadata": map[string]interface{}{"name": "x"}}}; !reflect.DeepEqual(updated.Object["spec"], want) {
		t.Errorf("spec %v, want %v", updated.Object["spec"], want)
	}
}
