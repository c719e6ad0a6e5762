package resource

import (
	"strings"
	"testing"

	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr is the part of a field.Error the tests compare.
type wantErr struct {
	typ  field.ErrorType
	path string
}

func selector(expr string) resourcev1beta2.DeviceSelector {
	return resourcev1beta2.DeviceSelector{CEL: &resourcev1beta2.CELDeviceSelector{Expression: expr}}
}

func opaque(driver, params string) resourcev1beta2.DeviceClassConfiguration {
	cfg := resourcev1beta2.DeviceClassConfiguration{}
	cfg.Opaque = &resourcev1beta2.OpaqueDeviceConfiguration{Driver: driver}
	if params != "" {
		cfg.Opaque.Parameters = runtime.RawExtension{Raw: []byte(params)}
	}
	return cfg
}

func validClass() *resourcev1beta2.DeviceClass {
	return &resourcev1beta2.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: "1"},
		Spec: resourcev1beta2.DeviceClassSpec{
			Selectors: []resourcev1beta2.DeviceSelector{selector(`device.driver == "gpu.example.com"`)},
			Config:    []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `{"kind":"GPUConfig"}`)},
		},
	}
}

// tooExpensive compiles but its estimated cost is above the 1,000,000 limit.
const tooExpensive = `device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))`

func checkErrors(t *testing.T, got field.ErrorList, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Type != want[i].typ || got[i].Field != want[i].path {
			t.Errorf("error %d: got %s at %q, want %s at %q (%v)", i, got[i].Type, got[i].Field, want[i].typ, want[i].path, got[i])
		}
	}
}

func TestValidateDeviceClass(t *testing.T) {
	tests := map[string]struct {
		mutate func(*resourcev1beta2.DeviceClass)
		want   []wantErr
	}{
		"valid": {
			mutate: func(*resourcev1beta2.DeviceClass) {},
		},
		"valid empty spec": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Spec = resourcev1beta2.DeviceClassSpec{} },
		},
		"valid cel.bind": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{
					selector(`cel.bind(dra, device.attributes["dra.example.com"], dra.someBool && dra.anotherBool)`),
				}
			},
		},
		"missing name": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Name = "" },
			want:   []wantErr{{field.ErrorTypeRequired, "metadata.name"}},
		},
		"bad name": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Name = "Bad_Name" },
			want:   []wantErr{{field.ErrorTypeInvalid, "metadata.name"}},
		},
		"namespace not allowed": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Namespace = "default" },
			want:   []wantErr{{field.ErrorTypeForbidden, "metadata.namespace"}},
		},
		"bad finalizer": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Finalizers = []string{"foo", "example.com/foo", "orphan"} },
			want:   []wantErr{{field.ErrorTypeInvalid, "metadata.finalizers[0]"}},
		},
		"selector without cel": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{{}}
			},
			want: []wantErr{{field.ErrorTypeRequired, "spec.selectors[0].cel"}},
		},
		"empty expression": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector("")}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[0].cel.expression"}},
		},
		"compile error": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector("true"), selector(`device.foo == "a"`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[1].cel.expression"}},
		},
		"wrong result type": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector("device.driver")}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[0].cel.expression"}},
		},
		"too expensive": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(tooExpensive)}
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.selectors[0].cel.expression"}},
		},
		"expression too long": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				// Would also fail to compile; too long expressions are not compiled.
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(strings.Repeat("x", resourcev1beta2.CELSelectorExpressionMaxLength+1))}
			},
			want: []wantErr{{field.ErrorTypeTooLong, "spec.selectors[0].cel.expression"}},
		},
		"expression at max length": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				expr := "true" + strings.Repeat(" ", resourcev1beta2.CELSelectorExpressionMaxLength-4)
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(expr)}
			},
		},
		"too many selectors": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = nil
				for i := 0; i < resourcev1beta2.DeviceSelectorsMaxSize+1; i++ {
					c.Spec.Selectors = append(c.Spec.Selectors, selector("true"))
				}
			},
			want: []wantErr{{field.ErrorTypeTooMany, "spec.selectors"}},
		},
		"config without opaque": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{{}}
			},
			want: []wantErr{{field.ErrorTypeRequired, "spec.config[0].opaque"}},
		},
		"missing driver and parameters": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("", "")}
			},
			want: []wantErr{
				{field.ErrorTypeRequired, "spec.config[0].opaque.driver"},
				{field.ErrorTypeInvalid, "spec.config[0].opaque.driver"},
				{field.ErrorTypeRequired, "spec.config[0].opaque.parameters"},
			},
		},
		"upper-case driver is accepted": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("GPU.Example.com", `{}`)}
			},
		},
		"bad driver": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu_example.com", `{}`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.config[0].opaque.driver"}},
		},
		"driver too long": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque(strings.Repeat("a", 64), `{}`)}
			},
			want: []wantErr{{field.ErrorTypeTooLong, "spec.config[0].opaque.driver"}},
		},
		"parameters null": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `null`)}
			},
			want: []wantErr{{field.ErrorTypeRequired, "spec.config[0].opaque.parameters"}},
		},
		"parameters not an object": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `[1]`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.config[0].opaque.parameters"}},
		},
		"parameters not JSON": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `{`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.config[0].opaque.parameters"}},
		},
		"parameters too long": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength+1))}
			},
			want: []wantErr{{field.ErrorTypeTooLong, "spec.config[0].opaque.parameters"}},
		},
		"parameters at max length": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength))}
			},
		},
		"too many configs": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = nil
				for i := 0; i < resourcev1beta2.DeviceConfigMaxSize+1; i++ {
					c.Spec.Config = append(c.Spec.Config, opaque("gpu.example.com", `{}`))
				}
			},
			want: []wantErr{{field.ErrorTypeTooMany, "spec.config"}},
		},
		"item errors come before TooMany": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{{}}
				for i := 0; i < resourcev1beta2.DeviceSelectorsMaxSize; i++ {
					c.Spec.Selectors = append(c.Spec.Selectors, selector("true"))
				}
			},
			want: []wantErr{
				{field.ErrorTypeRequired, "spec.selectors[0].cel"},
				{field.ErrorTypeTooMany, "spec.selectors"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			class := validClass()
			tc.mutate(class)
			checkErrors(t, ValidateDeviceClass(class), tc.want)
		})
	}
}

// bigParams returns a JSON object of exactly n bytes.
func bigParams(n int) string {
	prefix, suffix := `{"a":"`, `"}`
	return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
}

func TestValidateDeviceClassUpdate(t *testing.T) {
	// isSemver with a second argument only exists in the environment for
	// stored expressions in 1.33.
	const storedOnly = `isSemver("v1.0.0", true)`

	tests := map[string]struct {
		old    func(*resourcev1beta2.DeviceClass)
		mutate func(*resourcev1beta2.DeviceClass)
		want   []wantErr
	}{
		"unchanged": {},
		"label change": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Labels = map[string]string{"a": "b"} },
		},
		"name change": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Name = "other.example.com" },
			want:   []wantErr{{field.ErrorTypeInvalid, "metadata.name"}},
		},
		"bad finalizer added": {
			mutate: func(c *resourcev1beta2.DeviceClass) { c.Finalizers = []string{"foo"} },
			want:   []wantErr{{field.ErrorTypeInvalid, "metadata.finalizers[0]"}},
		},
		"new selector with compile error": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(`device.foo == "a"`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[0].cel.expression"}},
		},
		"new selector only valid when stored": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(storedOnly)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[0].cel.expression"}},
		},
		"unchanged stored selector": {
			old: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(storedOnly)}
			},
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(storedOnly)}
			},
		},
		"stored selectors changed": {
			old: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(storedOnly)}
			},
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(storedOnly), selector("true")}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.selectors[0].cel.expression"}},
		},
		"unchanged selector still checked for cost": {
			old: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(tooExpensive)}
			},
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(tooExpensive)}
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.selectors[0].cel.expression"}},
		},
		"unchanged oversized parameters": {
			old: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength+1))}
			},
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength+1))}
			},
		},
		"changed oversized parameters": {
			old: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength+1))}
			},
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", bigParams(resourcev1beta2.OpaqueParametersMaxLength+2))}
			},
			want: []wantErr{{field.ErrorTypeTooLong, "spec.config[0].opaque.parameters"}},
		},
		"invalid config": {
			mutate: func(c *resourcev1beta2.DeviceClass) {
				c.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `"x"`)}
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.config[0].opaque.parameters"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := validClass()
			if tc.old != nil {
				tc.old(old)
			}
			class := old.DeepCopy()
			if tc.mutate != nil {
				tc.mutate(class)
			}
			checkErrors(t, ValidateDeviceClassUpdate(class, old), tc.want)
		})
	}
}

func TestErrorDetails(t *testing.T) {
	class := validClass()
	class.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(`device.foo == "a"`), selector(tooExpensive)}
	class.Spec.Config = []resourcev1beta2.DeviceClassConfiguration{opaque("gpu.example.com", `[]`)}
	errs := ValidateDeviceClass(class)
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3: %v", len(errs), errs)
	}
	if !strings.HasPrefix(errs[0].Detail, "compilation failed: ERROR: <input>:1:7: undefined field 'foo'") {
		t.Errorf("unexpected compile error detail: %q", errs[0].Detail)
	}
	if errs[0].BadValue != `device.foo == "a"` {
		t.Errorf("unexpected bad value: %v", errs[0].BadValue)
	}
	if errs[1].Detail != "too complex, exceeds cost limit" {
		t.Errorf("unexpected cost error detail: %q", errs[1].Detail)
	}
	if errs[2].Detail != "parameters must be a valid JSON object" {
		t.Errorf("unexpected parameters error detail: %q", errs[2].Detail)
	}

	class = validClass()
	class.Spec.Selectors = []resourcev1beta2.DeviceSelector{selector(strings.Repeat("x", resourcev1beta2.CELSelectorExpressionMaxLength+1))}
	errs = ValidateDeviceClass(class)
	if len(errs) != 1 || errs[0].Error() != "spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes" {
		t.Errorf("unexpected too-long error: %v", errs)
	}
}
