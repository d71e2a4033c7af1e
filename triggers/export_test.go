package triggers

import "reflect"

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
