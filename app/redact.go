package app

import (
	"reflect"
	"sync"

	"github.com/pipeline-dev/pipeline/internal/redact"
)

// environmentRedactor: see redact.Environment.
var environmentRedactor = func() *redact.Redactor { return redact.Environment() }

// Redactor is what a surface redacts its own text with (an error message,
// a line it writes): the secrets of this process's environment and the
// known key patterns.
func Redactor() *redact.Redactor { return environmentRedactor() }

// redacted returns a copy of v whose every string is redacted by r: a
// response leaves the package so, whatever it quotes (a note given with
// the request, a file's text, a step's command line). v itself is left as
// it is: its slices and maps may be the session's own.
func redacted[T any](r *redact.Redactor, v T) T {
	in := reflect.ValueOf(&v).Elem()
	out := reflect.New(in.Type()).Elem()
	redactValue(r, out, in)
	return out.Interface().(T)
}

// redactValue sets dst, of src's type, to src with its strings redacted.
func redactValue(r *redact.Redactor, dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.String:
		dst.SetString(r.String(src.String()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		redactValue(r, p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		inner := src.Elem()
		v := reflect.New(inner.Type()).Elem()
		redactValue(r, v, inner)
		dst.Set(v)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			redactValue(r, s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			redactValue(r, dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()
		for iter.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			redactValue(r, k, iter.Key())
			v := reflect.New(src.Type().Elem()).Elem()
			redactValue(r, v, iter.Value())
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src) // unexported fields (a time.Time's) as they are
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				redactValue(r, dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}

// redactedOwned is redacted without the copy when no string of v changes,
// which is nearly always: the copy was 8 % of the status of a 1,000-phase
// plan. The result may then share v's slices and maps, so it is for a
// value made for the response alone (a report built from a state that
// is read for it), never for a session's own.
func redactedOwned[T any](r *redact.Redactor, v T) T {
	if !redactionChanges(newCleanStrings(r), reflect.ValueOf(&v).Elem()) {
		return v
	}
	return redacted(r, v)
}

// cleanStrings is a redactor with the last strings it left as they
// were: a report says "pending" and "0s" once for each phase not run
// yet. A few, not a map of all: most strings (the phases' names) come
// once.
type cleanStrings struct {
	r      *redact.Redactor
	recent *[8]string
	next   *int
}

func newCleanStrings(r *redact.Redactor) cleanStrings {
	return cleanStrings{r, new([8]string), new(int)}
}

// changes reports whether the redactor changes s.
func (c cleanStrings) changes(s string) bool {
	if s == "" {
		return false
	}
	for _, clean := range c.recent {
		if clean == s {
			return false
		}
	}
	if c.r.String(s) != s {
		return true
	}
	c.recent[*c.next%len(c.recent)] = s
	*c.next++
	return false
}

// redactionChanges reports whether r changes a string of v that
// redactValue would redact. Only the parts of v whose type can hold a
// string are looked at: the numbers of a 1,000-phase report are not.
func redactionChanges(r cleanStrings, v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return r.changes(v.String())
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && redactionChanges(r, v.Elem())
	case reflect.Slice, reflect.Array:
		// A struct's field is here only when its elements can hold a
		// string (stringFields): not asked again for each value.
		for i := range v.Len() {
			if redactionChanges(r, v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if redactionChanges(r, iter.Key()) || redactionChanges(r, iter.Value()) {
				return true
			}
		}
	case reflect.Struct:
		for _, i := range stringFields(v.Type()) {
			if redactionChanges(r, v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// fieldsOfType are, by struct type, the exported fields redactValue
// redacts that can hold a string ([]int); reflect's Type.Field, asked
// for each field of each value, was most of the cost.
var fieldsOfType sync.Map

func stringFields(t reflect.Type) []int {
	if fields, ok := fieldsOfType.Load(t); ok {
		return fields.([]int)
	}
	fields := []int{}
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && holdsStrings(f.Type) {
			fields = append(fields, i)
		}
	}
	fieldsOfType.Store(t, fields)
	return fields
}

// holdsStrings reports whether a value of type t can hold a string.
func holdsStrings(t reflect.Type) bool {
	if holds, ok := stringTypes.Load(t); ok {
		return holds.(bool)
	}
	holds := canHoldString(t, map[reflect.Type]bool{})
	stringTypes.Store(t, holds)
	return holds
}

// stringTypes are holdsStrings's answers, by type.
var stringTypes sync.Map

func canHoldString(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a type that holds itself: its other fields say
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return canHoldString(t.Elem(), seen)
	case reflect.Map:
		return canHoldString(t.Key(), seen) || canHoldString(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && canHoldString(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
