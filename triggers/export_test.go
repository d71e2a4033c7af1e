package triggers

import (
	"fmt"
	"reflect"
)

// CountExprTags counts the expr-tagged fields of Env.
func CountExprTags() int {
	n := 0
	t := reflect.TypeOf(Env{})
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("expr") != "" {
			n++
		}
	}
	return n
}

// CompileWithExpr is Compile without its short cut for a bare boolean
// variable.
func CompileWithExpr(source string, kind Kind) (*Expression, error) {
	return compileWithExpr(source, kind)
}

// SameCompiled tells whether two expressions are the same but for their
// expr programs, and why not.
func SameCompiled(a, b *Expression) (bool, string) {
	if (a == nil) != (b == nil) {
		return false, "one is nil"
	}
	if a == nil {
		return true, ""
	}
	ac, bc := *a, *b
	ac.program, bc.program = nil, nil
	if !reflect.DeepEqual(ac, bc) {
		return false, fmt.Sprintf("%+v != %+v", ac, bc)
	}
	return true, ""
}

// BoolFields are the short cut's fields of Env by name.
var BoolFields = map[string]int{"timed_out": timedOutField, "checkpoint": checkpointField}

// BoolFieldByReflection is 1 + the index of Env's boolean field name,
// found by reflection, or 0.
var BoolFieldByReflection = boolFieldNamed
