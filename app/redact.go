package app

import (
	"reflect"

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
	if !redactionChanges(r, reflect.ValueOf(&v).Elem()) {
		return v
	}
	return redacted(r, v)
}

// redactionChanges reports whether r changes a string of v that
// redactValue would redact.
func redactionChanges(r *redact.Redactor, v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return r.String(v.String()) != v.String()
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && redactionChanges(r, v.Elem())
	case reflect.Slice, reflect.Array:
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
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && redactionChanges(r, v.Field(i)) {
				return true
			}
		}
	}
	return false
}
