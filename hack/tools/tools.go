//go:build tools

// Package tools pins the code generators kapi runs (make generate) in a
// module of their own, so that their dependencies do not mix with kapi's.
package tools

import (
	_ "k8s.io/api/admissionregistration/v1"
	_ "k8s.io/api/admissionregistration/v1beta1"
	_ "k8s.io/api/autoscaling/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/api/resource/v1beta2"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
