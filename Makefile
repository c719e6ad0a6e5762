# kapi — the two commands a fresh machine with Go needs: `make run`, `make test`.
GO ?= go
BIN ?= bin/kapi

.PHONY: build run test lint unit e2e bench generate fuzz

build:
	$(GO) build -o $(BIN) .

# Serve on 127.0.0.1:6443 with the data in ./kapi-data; the kubeconfig is
# written to ./kapi-data/kubeconfig.
run: build
	./$(BIN) $(ARGS)

# Every test: lint, unit tests (race detector on), then the end-to-end
# tests against the real binary with client-go and kubectl.
test: lint
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)
	$(MAKE) fuzz FUZZTIME=500x
	$(GO) test -count=1 -timeout 15m ./e2e/

# The fuzz targets (body decoding, patches, continue tokens, list
# queries and selectors, CEL compilation, JSON encoding), as package:target;
# `make test` runs each briefly, `make fuzz FUZZTIME=5m` longer.
# `make test` counts executions (500x) rather than time: Go 1.26's fuzzer can
# fail a run with "context deadline exceeded" when a -fuzztime duration ends
# mid-execution (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 30s
FUZZ_TARGETS = server:FuzzDecodeBody server:FuzzApplyPatch server:FuzzContinueToken \
	server:FuzzListQuery server:FuzzCompileCEL server/unstructuredjson:FuzzMarshal server/unstructuredjson:FuzzUnmarshal
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}/ || exit 1; \
	done

unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e:
	$(GO) test -count=1 -timeout 15m ./e2e/

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The performance figures recorded in BENCHMARKS.md (kapi and its load
# generator share the machine): hack/bench starts the binary itself, prints
# one table and writes the same figures to bench.json.
bench:
	$(GO) build -o $(BIN) .
	$(GO) build -o bin/libfloor ./hack/libfloor
	$(GO) run ./hack/bench -kapi $(BIN) -libfloor bin/libfloor -json bench.json

# Regenerates the OpenAPI definitions of the built-in kinds (openapi/builtin)
# with the official generator, from hack/tools' own module, then their
# OpenAPI documents (openapi/builtin/docs) as kube-apiserver builds them
# from its routes (hack/openapigen). (gotypesalias=0:
# this kube-openapi release predates Go's type aliases in go/types.)
# The generator's GetOpenAPIDefinitions builds all 399 definitions at once;
# the sed turns it into definitionFuncs, a map of the functions that build
# each, so that kapi builds only the ones its served kinds reach
# (openapi/builtin/definitions.go).
generate:
	cd hack/tools && GODEBUG=gotypesalias=0 $(GO) run k8s.io/kube-openapi/cmd/openapi-gen \
		--output-dir ../../openapi/builtin --output-pkg github.com/kapi-dev/kapi/openapi/builtin \
		--output-file zz_generated.openapi.go --report-filename /dev/null \
		k8s.io/api/core/v1 k8s.io/api/admissionregistration/v1 k8s.io/api/admissionregistration/v1beta1 \
		k8s.io/api/resource/v1beta2 k8s.io/api/autoscaling/v1 k8s.io/apimachinery/pkg/apis/meta/v1 \
		k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/api/resource \
		k8s.io/apimachinery/pkg/util/intstr
	sed -i \
		-e 's/^func GetOpenAPIDefinitions(ref common.ReferenceCallback) map\[string\]common.OpenAPIDefinition {$$/func definitionFuncs() map[string]func(common.ReferenceCallback) common.OpenAPIDefinition {/' \
		-e 's/^\treturn map\[string\]common.OpenAPIDefinition{$$/\treturn map[string]func(common.ReferenceCallback) common.OpenAPIDefinition{/' \
		-e 's/^\(\t\t"[^"]*": *schema_[A-Za-z0-9_]*\)(ref),$$/\1,/' \
		openapi/builtin/zz_generated.openapi.go
	$(GO) fmt ./openapi/builtin >/dev/null
	rm -rf openapi/builtin/docs.new
	$(GO) run ./hack/openapigen openapi/builtin/docs.new
	rm -rf openapi/builtin/docs && mv openapi/builtin/docs.new openapi/builtin/docs
