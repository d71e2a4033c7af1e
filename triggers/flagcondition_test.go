package triggers_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/pipeline-dev/pipeline/triggers"
)

// Compile makes a bare boolean variable (the built-in pause_when
// checkpoint) without expr: what it makes must be what expr's path
// makes, for every name an expression may write and every kind, the
// errors included, and must evaluate the same.
func TestCompileOfABareVariableIsExprs(t *testing.T) {
	var sources []string
	env := reflect.TypeFor[triggers.Env]()
	for i := range env.NumField() {
		name := env.Field(i).Tag.Get("expr")
		sources = append(sources, name, " "+name, name+" ", "!"+name, "("+name+")")
	}
	sources = append(sources, "Checkpoint", "TimedOut", "ran", "true", "$env", "checkpoint_note", "")
	bare := 0
	for _, source := range sources {
		for _, kind := range []triggers.Kind{triggers.Condition, triggers.Duration, triggers.When} {
			got, gotErr := triggers.Compile(source, kind)
			want, wantErr := triggers.CompileWithExpr(source, kind)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("Compile(%q, %v): error %v, expr's path: %v", source, kind, gotErr, wantErr)
			}
			if same, why := triggers.SameCompiled(got, want); !same {
				t.Fatalf("Compile(%q, %v) differs from expr's path: %s", source, kind, why)
			}
			if got == nil || kind != triggers.Condition {
				continue
			}
			if source == "checkpoint" || source == "timed_out" {
				bare++
			}
			for _, e := range []triggers.Env{{}, {Checkpoint: true}, {TimedOut: true}, {Checkpoint: true, TimedOut: true}} {
				g, gErr := got.Eval(&e)
				w, wErr := want.Eval(&e)
				if g != w || fmt.Sprint(gErr) != fmt.Sprint(wErr) {
					t.Fatalf("%q on %+v: %v, %v; expr's path: %v, %v", source, e, g, gErr, w, wErr)
				}
			}
		}
	}
	if bare != 2 {
		t.Fatalf("%d bare boolean variables compiled, want checkpoint and timed_out", bare)
	}
}

// The short cut knows every boolean field of Env, at its index.
func TestBoolFieldsAreEnvs(t *testing.T) {
	env := reflect.TypeFor[triggers.Env]()
	n := 0
	for i := range env.NumField() {
		name := env.Field(i).Tag.Get("expr")
		want := triggers.BoolFieldByReflection(name)
		if want == 0 {
			continue
		}
		n++
		if got := triggers.BoolFields[name]; got != want {
			t.Errorf("the short cut reads %s as the field %d, Env has it at %d", name, got, want)
		}
	}
	if n != len(triggers.BoolFields) {
		t.Errorf("Env has %d boolean fields, the short cut knows %d", n, len(triggers.BoolFields))
	}
}
