// Command libfloor links the libraries kapi is built on (DESIGN.md's table,
// and kube-apiserver's admission plugins kapi runs) and does nothing else:
// it prints its resident memory (VmRSS, RssAnon, RssFile of /proc/self/status,
// in KiB) once their package initialisation is over. `make bench` reports
// it beside kapi's idle RSS as the floor no code of kapi's can go below.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	_ "github.com/go-chi/chi/v5"
	_ "github.com/google/cel-go/cel"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "gopkg.in/evanphx/json-patch.v4"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	_ "k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	_ "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	_ "k8s.io/apimachinery/pkg/util/managedfields"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	_ "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	_ "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	_ "k8s.io/apiserver/pkg/cel/library"
	_ "modernc.org/sqlite"
)

func main() {
	// As kapi's idle figure: measured after a pause, the start-up garbage
	// collected.
	runtime.GC()
	time.Sleep(time.Second)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, key := range []string{"VmRSS:", "RssAnon:", "RssFile:"} {
			if strings.HasPrefix(line, key) {
				fmt.Println(line)
			}
		}
	}
}
