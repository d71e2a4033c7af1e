// Package lazy holds the package-level values that are built on first
// use. A Value is written as a composite literal, which the compiler lays
// out in the binary: a package whose values are all such has no init
// work, where var x = sync.OnceValue(f) is a call made at every start of
// the program. Each package with init work costs the start of pipeline a
// page of its code read in, and more (README, "Start-up").
package lazy

import "sync"

// Value is a T built by New on the first Get.
type Value[T any] struct {
	New   func() T
	once  sync.Once
	value T
}

// Get is the value, built on the first call.
func (v *Value[T]) Get() T {
	v.once.Do(func() { v.value = v.New() })
	return v.value
}
