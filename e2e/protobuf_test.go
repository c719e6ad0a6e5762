package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"golang.org/x/net/websocket"
)

// protobufCodec reads and writes kube's protobuf: client-go's kinds,
// apiextensions' and meta.k8s.io's.
func protobufCodec(t testing.TB) *protobuf.Serializer {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientscheme.AddToScheme, apiextensionsv1.AddToScheme, metav1.AddMetaToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return protobuf.NewSerializer(scheme, scheme)
}

// createScalable creates a CRD "pbscales" in group with a /scale
// subresource and one of its custom resources, "one" in default (labelled
// app=x, 2 replicas), and returns its resource.
func createScalable(t testing.TB, k *kapi, group string) schema.GroupVersionResource {
	t.Helper()
	crd := newCRD("pbscales", group)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
		SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
	}}
	createCRD(t, k, crd)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "pbscales"}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Pbscale",
		"metadata": map[string]any{"name": "one", "labels": map[string]any{"app": "x"}}, "spec": map[string]any{"replicas": int64(2)}}}
	if _, err := k.Dyn.Resource(gvr).Namespace("default").Create(ctxT(t), cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return gvr
}

// protobufOnly is a client configuration that sends and accepts only
// protobuf, as kube's own components configure theirs.
func protobufOnly(k *kapi) *rest.Config {
	cfg := rest.CopyConfig(k.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	return cfg
}

// The built-in kinds are served as protobuf to a client that accepts only
// protobuf, as kube-apiserver serves them: objects, lists, errors and
// watches, through client-go's typed clients and informers.
func TestProtobufBuiltinKinds(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	cfg := protobufOnly(k)
	c := kubernetes.NewForConfigOrDie(cfg)
	ext := apiextensionsclientset.NewForConfigOrDie(cfg)
	ctx := ctxT(t)

	// Objects and lists.
	ns, err := c.CoreV1().Namespaces().Create(ctx, newNamespace("pb"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.UID == "" || ns.Labels["kubernetes.io/metadata.name"] != "pb" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("created namespace %+v", ns)
	}
	ns.Labels["tier"] = "gold"
	if ns, err = c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil || ns.Labels["tier"] != "gold" {
		t.Errorf("update: %v %v", err, ns.Labels)
	}
	if ns, err = c.CoreV1().Namespaces().Patch(ctx, "pb", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"a"}}}`), metav1.PatchOptions{}); err != nil || ns.Labels["zone"] != "a" {
		t.Errorf("patch: %v %v", err, ns.Labels)
	}
	list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "pb" || list.ResourceVersion == "" {
		t.Errorf("list: %v %+v", err, list)
	}
	vwc, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("pb"), metav1.CreateOptions{})
	if err != nil || len(vwc.Webhooks) != 1 || *vwc.Webhooks[0].TimeoutSeconds != 10 {
		t.Errorf("webhook configuration: %v %+v", err, vwc)
	}
	vap, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, newVAP("pb"), metav1.CreateOptions{})
	if err != nil || vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("policy: %v %+v", err, vap)
	}
	dc := &resourcev1beta2.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Spec: resourcev1beta2.DeviceClassSpec{
		Config: []resourcev1beta2.DeviceClassConfiguration{{DeviceConfiguration: resourcev1beta2.DeviceConfiguration{
			Opaque: &resourcev1beta2.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"mode":"shared"}`)}},
		}}},
	}}
	if dc, err = c.ResourceV1beta2().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil || string(dc.Spec.Config[0].Opaque.Parameters.Raw) != `{"mode":"shared"}` {
		t.Errorf("device class: %v %+v", err, dc)
	}
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, newCRD("pbs", "pb.example.com"), metav1.CreateOptions{})
	if err != nil || crd.Spec.Versions[0].Name != "v1" {
		t.Fatalf("CRD: %v %+v", err, crd)
	}
	waitFor(t, "the CRD, read as protobuf, Established", func() bool {
		crd, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})

	// Every built-in kind's list, in every served version, is its Go type's
	// protobuf.
	_, resourceLists, err := k.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	codec := protobufCodec(t)
	lists := 0
	for _, rl := range resourceLists {
		gv, _ := schema.ParseGroupVersion(rl.GroupVersion)
		if gv.Group == "pb.example.com" {
			continue // a custom resource's: none
		}
		for _, res := range rl.APIResources {
			if strings.Contains(res.Name, "/") {
				continue
			}
			prefix := "/apis/" + rl.GroupVersion
			if gv.Group == "" {
				prefix = "/api/" + gv.Version
			}
			r := k.do(t, "GET", prefix+"/"+res.Name, nil, "Accept: application/vnd.kubernetes.protobuf")
			obj, gvk, err := codec.Decode(r.Body, nil, nil)
			if err != nil || gvk == nil || *gvk != gv.WithKind(res.Kind+"List") || meta.LenList(obj) < 0 {
				t.Errorf("%s/%s in protobuf: %d %v %v", rl.GroupVersion, res.Name, r.Code, gvk, err)
			}
			lists++
		}
	}
	if lists < 9 { // namespaces, 2 webhook configurations, 2×2 policies and bindings, device classes, CRDs
		t.Errorf("%d built-in lists read, want at least 9", lists)
	}

	// Errors are protobuf Statuses, which client-go reads as such.
	_, err = c.CoreV1().Namespaces().Get(ctx, "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "missing" not found` {
		t.Errorf("get missing: %v", err)
	}
	if _, err = c.CoreV1().Namespaces().Create(ctx, newNamespace("pb"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create again: %v", err)
	}
	bad := newVWC("bad")
	bad.Webhooks[0].Name = "no-dots"
	if _, err = c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("invalid create: %v", err)
	} else if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) == 0 || causes[0].Field != "webhooks[0].name" {
		t.Errorf("invalid create: causes %+v", causes)
	}

	// A watch streams protobuf events; an informer lists and watches so.
	w, err := c.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.CoreV1().Namespaces().Create(ctx, newNamespace("pb-watched"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*corev1.Namespace); ev.Type != watch.Added || !ok || got.Name != "pb-watched" || got.UID == "" {
			t.Errorf("watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	// A watch-list ends its initial events with a bookmark whose list
	// blueprint is in the stream's encoding, which client-go decodes it
	// with.
	wl, err := c.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	added := 0
	for done := false; !done; {
		select {
		case ev := <-wl.ResultChan():
			switch ns, _ := ev.Object.(*corev1.Namespace); {
			case ev.Type == watch.Added && ns != nil:
				added++
			case ev.Type == watch.Bookmark && ns != nil && ns.Annotations[metav1.InitialEventsAnnotationKey] == "true":
				blueprint, err := base64.StdEncoding.DecodeString(ns.Annotations[metav1.InitialEventsListBlueprintAnnotationKey])
				obj, _, derr := codec.Decode(blueprint, nil, nil)
				if _, ok := obj.(*corev1.NamespaceList); err != nil || derr != nil || !ok {
					t.Errorf("the watch-list's blueprint: %v %v %#v", err, derr, obj)
				}
				done = true
			default:
				t.Fatalf("watch-list event %s %#v", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the watch-list did not end its initial events in 10s")
		}
	}
	if all, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil || added != len(all.Items) {
		t.Errorf("the watch-list's initial events: %d namespaces, a list: %v %d", added, err, len(all.Items))
	}
	factory := informers.NewSharedInformerFactory(c, 0)
	informer := factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer never synced")
	}
	if _, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, newVWC("pb-later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the protobuf informer's store to hold both configurations", func() bool {
		_, ok, _ := informer.GetStore().GetByKey("pb-later")
		_, first, _ := informer.GetStore().GetByKey("pb")
		return ok && first
	})

	// What goes on the wire: the protobuf media type, kube's envelope,
	// and a 406 naming it where no form the client accepts exists.
	r := k.do(t, "GET", "/api/v1/namespaces/pb", nil, "Accept: application/vnd.kubernetes.protobuf")
	if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.HasPrefix(r.Body, []byte("k8s\x00")) {
		t.Errorf("GET in protobuf: %d %q %q", r.Code, r.Header.Get("Content-Type"), r.Body[:min(len(r.Body), 8)])
	}
	r = k.do(t, "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=1", nil, "Accept: application/vnd.kubernetes.protobuf")
	if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Errorf("watch in protobuf: %d %q", r.Code, r.Header.Get("Content-Type"))
	}
	// Over a WebSocket each event is a binary message of its protobuf.
	wsCfg, err := websocket.NewConfig("ws://"+strings.TrimPrefix(k.URL, "http://")+"/api/v1/namespaces?watch=true&resourceVersion="+list.ResourceVersion, "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	wsCfg.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	ws, err := websocket.DialConfig(wsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var msg []byte
	if err := websocket.Message.Receive(ws, &msg); err != nil {
		t.Fatal(err)
	}
	var wev metav1.WatchEvent
	if err := wev.Unmarshal(msg); err != nil {
		t.Fatalf("a WebSocket message is not a protobuf WatchEvent: %v %q", err, msg)
	}
	obj, _, err := codec.Decode(wev.Object.Raw, nil, nil)
	if got, ok := obj.(*corev1.Namespace); err != nil || !ok || wev.Type != "ADDED" || got.Name != "pb-watched" {
		t.Errorf("a WebSocket event: %s %v %#v", wev.Type, err, obj)
	}
	r = k.do(t, "GET", "/api/v1/namespaces", nil, "Accept: application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1")
	expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
}

// A custom resource has no protobuf form (406), nor has its Scale (kube's
// scale handler keeps the custom resource's media types); its
// PartialObjectMetadata has, as client-go's metadata client (which prefers
// protobuf) reads it.
func TestProtobufCustomResources(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	gvr := createScalable(t, k, "pb.example.com")
	path := "/apis/pb.example.com/v1/namespaces/default/pbscales"
	codec := protobufCodec(t)
	// The 406 itself is a Status in protobuf, the form the client
	// accepts, as kube-apiserver negotiates an error.
	for _, target := range []string{path + "/one", path + "?watch=true&timeoutSeconds=1", path + "/one/scale"} {
		r := k.do(t, "GET", target, nil, "Accept: application/vnd.kubernetes.protobuf")
		obj, _, err := codec.Decode(r.Body, nil, nil)
		if st, ok := obj.(*metav1.Status); r.Code != http.StatusNotAcceptable || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || err != nil || !ok ||
			st.Reason != metav1.StatusReasonNotAcceptable || st.Message != "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" {
			t.Errorf("GET %s in protobuf: %d %q %v %#v", target, r.Code, r.Header.Get("Content-Type"), err, obj)
		}
	}

	// The metadata client, as metadata informers use it.
	mc := metadata.NewForConfigOrDie(k.Config)
	pom, err := mc.Resource(gvr).Namespace("default").Get(ctxT(t), "one", metav1.GetOptions{})
	if err != nil || pom.Name != "one" || pom.Labels["app"] != "x" || pom.UID == "" {
		t.Errorf("metadata get: %v %+v", err, pom)
	}
	poml, err := mc.Resource(gvr).Namespace("default").List(ctxT(t), metav1.ListOptions{})
	if err != nil || len(poml.Items) != 1 || poml.Items[0].Name != "one" || poml.ResourceVersion == "" {
		t.Errorf("metadata list: %v %+v", err, poml)
	}
	w, err := mc.Resource(gvr).Namespace("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: poml.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := k.Dyn.Resource(gvr).Namespace("default").Patch(ctxT(t), "one", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Modified || !ok || got.Labels["app"] != "y" {
			t.Errorf("metadata watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no metadata watch event in 10s")
	}
	for _, as := range []string{"PartialObjectMetadata", "PartialObjectMetadataList"} {
		target := path + "/one"
		if as == "PartialObjectMetadataList" {
			target = path
		}
		r := k.do(t, "GET", target, nil, "Accept: application/vnd.kubernetes.protobuf;as="+as+";g=meta.k8s.io;v=v1")
		if r.Code != http.StatusOK || r.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
			t.Errorf("%s in protobuf: %d %q", as, r.Code, r.Header.Get("Content-Type"))
		}
	}

	// A Scale write refused for its answer's form changes nothing.
	r := k.do(t, "PATCH", path+"/one/scale", []byte(`{"spec":{"replicas":3}}`), "Content-Type: application/merge-patch+json", "Accept: application/vnd.kubernetes.protobuf")
	if r.Code != http.StatusNotAcceptable {
		t.Errorf("a Scale patch answered in protobuf: %d", r.Code)
	}
	if got, err := k.Dyn.Resource(gvr).Namespace("default").Get(ctxT(t), "one", metav1.GetOptions{}); err != nil || got.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("after a refused Scale patch: %v %v", err, got)
	}

	// Discovery's documents have protobuf forms too.
	r = k.do(t, "GET", "/apis", nil, "Accept: application/vnd.kubernetes.protobuf")
	obj, _, err := codec.Decode(r.Body, nil, nil)
	if groups, ok := obj.(*metav1.APIGroupList); err != nil || !ok || !strings.Contains(groups.String(), "pb.example.com") {
		t.Errorf("/apis in protobuf: %d %v %#v", r.Code, err, obj)
	}
}

// What kube-apiserver's handlers do with a transformation or a media type
// on the answers of writes and around errors: a delete's Status goes out
// as it is in the media type negotiated (protobuf here) whatever the
// transformation asked; a deletecollection's list is transformed (its
// PartialObjectMetadataList, or a Table); a /scale write's Scale too; a
// Scale asked for as a PartialObjectMetadataList is kube's 406 naming its
// Go type; a get negotiates before it reads (a custom resource asked for
// in protobuf alone is a 406 even when missing); a list reads and
// validates its options before it negotiates.
func TestProtobufTransformedAnswers(t *testing.T) {
	t.Parallel()
	k := startMemKapi(t)
	codec := protobufCodec(t)
	decode := func(r httpResult) runtime.Object {
		t.Helper()
		if ct := r.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf" {
			t.Errorf("Content-Type %q, want protobuf; %d %.200q", ct, r.Code, r.Body)
			return nil
		}
		obj, _, err := codec.Decode(r.Body, nil, nil)
		if err != nil {
			t.Errorf("undecodable protobuf: %v", err)
		}
		return obj
	}
	const vwcs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	for _, name := range []string{"one", "two", "three"} {
		vwc := newVWC(name)
		vwc.Labels = map[string]string{"set": map[bool]string{true: "a", false: "b"}[name != "three"]}
		if _, err := k.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctxT(t), vwc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pom := "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	poml := "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	r := k.do(t, "DELETE", vwcs+"/one", nil, pom)
	if st, ok := decode(r).(*metav1.Status); r.Code != http.StatusOK || !ok || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "one" {
		t.Errorf("delete answered as PartialObjectMetadata: %d %#v", r.Code, st)
	}
	r = k.do(t, "DELETE", vwcs+"?labelSelector=set%3Da", nil, poml)
	if l, ok := decode(r).(*metav1.PartialObjectMetadataList); r.Code != http.StatusOK || !ok || len(l.Items) != 1 || l.Items[0].Name != "two" || l.Items[0].Labels["set"] != "a" {
		t.Errorf("deletecollection answered as PartialObjectMetadataList: %d %#v", r.Code, l)
	}
	r = k.do(t, "DELETE", vwcs+"?labelSelector=set%3Db", nil, "Accept: application/json;as=Table;g=meta.k8s.io;v=v1")
	var table metav1.Table
	if err := json.Unmarshal(r.Body, &table); r.Code != http.StatusOK || err != nil || table.Kind != "Table" || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "three" {
		t.Errorf("deletecollection answered as a Table: %d %v %.300s", r.Code, err, r.Body)
	}

	createScalable(t, k, "pbt.example.com")
	path := "/apis/pbt.example.com/v1/namespaces/default/pbscales"
	r = k.do(t, "PATCH", path+"/one/scale", []byte(`{"spec":{"replicas":3}}`), "Content-Type: application/merge-patch+json", pom)
	if m, ok := decode(r).(*metav1.PartialObjectMetadata); r.Code != http.StatusOK || !ok || m.Name != "one" || m.Kind != "PartialObjectMetadata" {
		t.Errorf("scale patched, answered as PartialObjectMetadata: %d %#v", r.Code, m)
	}
	// A Scale written in protobuf, as kube's scale endpoint (autoscaling/v1's
	// codecs) takes it; its 415 names protobuf. The answer is JSON: the
	// endpoint keeps the custom resource's standard (response) media types.
	var scaleBody bytes.Buffer
	if err := codec.Encode(&autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}, &scaleBody); err != nil {
		t.Fatal(err)
	}
	r = k.do(t, "PUT", path+"/one/scale", scaleBody.Bytes(), "Content-Type: application/vnd.kubernetes.protobuf", "Accept: application/json")
	var written autoscalingv1.Scale
	if err := json.Unmarshal(r.Body, &written); r.Code != http.StatusOK || err != nil || written.Spec.Replicas != 5 {
		t.Errorf("scale written in protobuf: %d %v %s", r.Code, err, r.Body)
	}
	r = k.do(t, "PUT", path+"/one/scale", []byte("{}"), "Content-Type: text/plain")
	expectStatus(t, r, http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")

	// An error's Status takes no transformation: with none of the forms
	// the client accepts, it is kube's indented JSON.
	r = k.do(t, "GET", path+"/one/scale", nil, poml)
	expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Scale)")
	const notAcceptable = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	r = k.do(t, "GET", path+"/missing/scale", nil, "Accept: application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1")
	expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, notAcceptable)
	r = k.do(t, "GET", path+"/missing", nil, "Accept: application/vnd.kubernetes.protobuf")
	if st, ok := decode(r).(*metav1.Status); r.Code != http.StatusNotAcceptable || !ok || st.Message != notAcceptable {
		t.Errorf("GET a missing custom resource in protobuf: %d %#v", r.Code, st)
	}
	r = k.do(t, "GET", path+"?resourceVersionMatch=NotOlderThan", nil, "Accept: application/vnd.kubernetes.protobuf")
	if st, ok := decode(r).(*metav1.Status); r.Code != http.StatusUnprocessableEntity || !ok || st.Reason != metav1.StatusReasonInvalid ||
		!strings.Contains(st.Message, "resourceVersionMatch is forbidden unless resourceVersion is provided") {
		t.Errorf("a list with invalid options, asked for in protobuf: %d %#v", r.Code, st)
	}
}
