//go:build !linux

package main

// releaseStartupPages does nothing where there is no /proc/self/smaps.
func releaseStartupPages() (int64, error) { return 0, nil }
