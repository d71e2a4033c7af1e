package store

import (
	"path/filepath"
	"strings"
)

// The store names phases.yaml and the spec of its sessions relative to
// its base: the folder that holds the store's folder (the project, for
// the default .pipeline beside phases.yaml). A store copied or moved with
// its project (a CI cache restored in another checkout, an artifact, a
// rename) finds them there, and their key (Key) is the same. A store
// kept apart from its project (--state-dir elsewhere) names them with
// "../" from its base: that holds as long as both move together.

// Base is the folder the store's paths are relative to: the one that
// holds the store's folder, absolute.
func (s *Store) Base() string { return s.base }

// Rel names path (absolute, or relative to the working folder) from the
// store's base, with forward slashes; "" stays "".
func (s *Store) Rel(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	rel, err := filepath.Rel(s.base, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	if outside(rel) {
		// The base or the path may be reached through a symbolic link (a
		// project opened through a linked folder, a state folder named by
		// its real path): their real paths may show the path inside.
		realBase, errBase := filepath.EvalSymlinks(s.base)
		realPath, errPath := realDir(abs)
		if errBase == nil && errPath == nil {
			if r, err := filepath.Rel(realBase, realPath); err == nil && !outside(r) {
				rel = r
			}
		}
	}
	return filepath.ToSlash(rel)
}

// Abs is the absolute path of a path the store keeps: relative to its
// base, or absolute (format 1); "" stays "".
func (s *Store) Abs(rel string) string {
	if rel == "" {
		return ""
	}
	if filepath.IsAbs(rel) {
		return filepath.Clean(rel)
	}
	// The sessions of a store are mostly of one phases.yaml: a listing
	// makes the same path absolute for each, and keeps the last one.
	if last := s.lastAbs.Load(); last != nil && last[0] == rel {
		return last[1]
	}
	abs := filepath.Join(s.base, filepath.FromSlash(rel))
	s.lastAbs.Store(&[2]string{rel, abs})
	return abs
}

// outside reports whether a relative path leaves its folder.
func outside(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// realDir is path with the links of its folder resolved (the file itself
// need not exist).
func realDir(path string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(path)), nil
}
