// Package atomicfile replaces a file whole: a reader sees the old file or
// the new one, never half of one, and a failure leaves no part of it.
package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Write writes the file at path through write: a temporary file beside
// it, with mode, synced, then renamed over it.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return errors.Join(err, removeIfThere(f.Name()))
	}
	return nil
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
