//go:build !linux

package skills

import "os"

func exchangeInRoot(r *os.Root, a, b string) error { return exchangeByRenames(r, a, b) }
