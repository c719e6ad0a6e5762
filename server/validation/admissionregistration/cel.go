package admissionregistration

import (
	"fmt"
	"sync"

	celgo "github.com/google/cel-go/cel"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Expressions are compiled with the same library entry points kube-apiserver's
// validation uses: plugincel.NewCompiler (or NewCompositedCompiler when the
// policy declares variables) over the base environment at the default
// compatibility version, with strict cost enforcement (StrictCostEnforcementForVAP
// and StrictCostEnforcementForWebhooks are GA and locked on in v1.33).

// expression is a CEL expression together with the result types it may have;
// it implements plugincel.ExpressionAccessor.
type expression struct {
	text        string
	returnTypes []*celgo.Type
}

func (e expression) GetExpression() string      { return e.text }
func (e expression) ReturnTypes() []*celgo.Type { return e.returnTypes }

// Result types kube requires of each kind of expression.
func boolExpression(text string) expression {
	return expression{text, []*celgo.Type{celgo.BoolType}}
}

func messageExpression(text string) expression {
	return expression{text, []*celgo.Type{celgo.StringType}}
}

func auditValueExpression(text string) expression {
	return expression{text, []*celgo.Type{celgo.StringType, celgo.NullType}}
}

func variableExpression(name, text string) variable {
	return variable{expression{text, []*celgo.Type{celgo.AnyType, celgo.DynType}}, name}
}

// variable is a named expression; it implements plugincel.NamedExpressionAccessor.
type variable struct {
	expression
	name string
}

func (v variable) GetName() string { return v.name }

var (
	statelessCompilerOnce sync.Once
	statelessCompiler     plugincel.Compiler
)

// getStatelessCompiler returns the shared compiler used when variable
// composition is not needed (match conditions, policies without variables).
func getStatelessCompiler() plugincel.Compiler {
	statelessCompilerOnce.Do(func() {
		statelessCompiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true))
	})
	return statelessCompiler
}

// newPolicyCompiler returns the compiler for one policy. A policy with
// variables needs a composited compiler, which is stateful: each variable
// compiled is added to the "variables" object seen by later expressions.
func newPolicyCompiler(hasVariables bool) plugincel.Compiler {
	if !hasVariables {
		return getStatelessCompiler()
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true))
	if err != nil {
		runtime.HandleError(err)
		return getStatelessCompiler()
	}
	return compiler
}

func envType(preexisting bool) environment.Type {
	if preexisting {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// compile compiles one expression and converts a failure to a field error the
// way kube-apiserver does.
func compile(compiler plugincel.Compiler, expr plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, preexisting bool, fldPath *field.Path) field.ErrorList {
	result := compiler.CompileCELExpression(expr, decls, envType(preexisting))
	if result.Error != nil {
		return field.ErrorList{celErrorToFieldError(fldPath, expr.GetExpression(), result.Error)}
	}
	return nil
}

func celErrorToFieldError(fldPath *field.Path, expr string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(fldPath, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(fldPath, expr, err.Detail)
	case apiservercel.ErrorTypeInternal:
		return field.InternalError(fldPath, err)
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}
