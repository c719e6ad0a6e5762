package server

import "time"

// byGeneration holds a value built for one generation of the registry:
// it is built again only when the served kinds change. Callers hold a
// lock of their own around get.
type byGeneration[T any] struct {
	value T
	gen   int64
	built time.Time // zero until built
}

// get returns the value for generation gen, building it if needed, and
// when it was built.
func (c *byGeneration[T]) get(gen int64, build func() (T, error)) (T, time.Time, error) {
	if c.built.IsZero() || c.gen != gen {
		v, err := build()
		if err != nil {
			var zero T
			return zero, time.Time{}, err
		}
		c.value, c.gen, c.built = v, gen, time.Now()
	}
	return c.value, c.built, nil
}
