//go:build !linux

package spec

// mappedBuildID is "" where the executable's mapping is not read:
// readBuildID reads the file.
func mappedBuildID() string { return "" }
