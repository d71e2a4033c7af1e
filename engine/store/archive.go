package store

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/internal/osrand"
)

// An exported session (pipeline export) is one gzip'd tar: first
// manifest.json (what it is, its format, the session's line of the index,
// every file with its size and SHA-256), then the session's files under
// the session's id: meta.json (in this store format: paths relative to
// the store's base), state.json, events.jsonl, the transcripts and the
// files the session service names (the spec kept at a pause). Nothing
// that only means something on the machine that wrote it goes: not the
// process group of a step, not a request to a runner, not the locks.
//
// Import reads one back into a store and trusts none of it: only regular
// files, only the names an export writes (no absolute path, no "..", no
// link, device or pipe), each listed in the manifest with its size and
// hash, all of them within a size limit checked before a byte is written,
// into a folder of the store made under a temporary name (beneath.go: no
// link is followed) and renamed into place once whole and checked.

// ArchiveFormat is the version of an exported session's archive.
const ArchiveFormat = 1

// ArchiveKind names an exported session in its manifest.
const ArchiveKind = "pipeline-session"

const (
	manifestName = "manifest.json"
	metaName     = "meta.json"
	eventsName   = "events.jsonl"
	stateName    = "state.json"
	// maxManifest bounds the manifest, read whole before anything else.
	maxManifest = 16 << 20
)

// DefaultImportMaxSize is the most bytes an imported session's files may
// hold together, unless ImportOptions says otherwise.
const DefaultImportMaxSize = 4 << 30

// Manifest is the first entry of an exported session.
type Manifest struct {
	Kind   string `json:"kind"`
	Format int    `json:"format"`
	// StoreFormat is the Format of the session's files.
	StoreFormat int    `json:"store_format"`
	Session     string `json:"session"`
	// Summary is the session's line of the index, its paths relative.
	Summary Summary `json:"summary"`
	// Files are the session's files, by their names in its folder.
	Files    []ArchivedFile `json:"files"`
	Exported time.Time      `json:"exported"`
}

// ArchivedFile is one file of an exported session.
type ArchivedFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Filter rewrites a file's bytes as they are exported (the session's
// redaction: *redact.Stream is one): Write returns what to write for a
// chunk, Flush what it held back at the end.
type Filter interface {
	Write(chunk []byte) []byte
	Flush() []byte
}

// ExportOptions say what goes with a session.
type ExportOptions struct {
	// Summary is the session's line of the index, as its files say.
	Summary Summary
	// Files are the files of the session's folder that go with it besides
	// meta.json, state.json, events.jsonl and the transcripts; they are
	// the only others an import takes.
	Files []string
	// Filter, when set, makes the filter each file passes through.
	Filter func() Filter
	// Now is the time of the export.
	Now time.Time
}

// Export writes the session id as one gzip'd tar to w. Its files are read
// twice (once for the manifest's sizes and hashes, once to write them): a
// session written meanwhile is refused, not exported torn. The caller
// keeps runners out (a running session is refused by the session
// service).
func (s *Store) Export(id string, w io.Writer, o ExportOptions) (Manifest, error) {
	meta, err := s.find(id)
	if err != nil {
		return Manifest{}, err
	}
	names, err := s.portableNames(meta.ID, o.Files)
	if err != nil {
		return Manifest{}, err
	}
	metaContent, err := s.metaJSON(meta)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Kind: ArchiveKind, Format: ArchiveFormat, StoreFormat: Format, Session: meta.ID,
		Summary: s.portable(o.Summary), Exported: o.Now.UTC()}
	m.Summary.ID, m.Summary.Key, m.Summary.Pipeline, m.Summary.Created = meta.ID, meta.Key, meta.Pipeline, meta.Created
	m.Summary.File, m.Summary.Spec = s.Rel(meta.File), s.Rel(meta.Spec)
	// The sizes of the files as they are now: a log appended to meanwhile
	// is read up to here.
	limits := map[string]int64{}
	for _, n := range names {
		af := ArchivedFile{Name: n}
		if n == metaName {
			af.Size, af.SHA256 = int64(len(metaContent)), sha(metaContent)
		} else {
			if limits[n], err = s.size(sessionRel(meta.ID) + "/" + n); err != nil {
				return Manifest{}, err
			}
			h := sha256.New()
			if af.Size, err = s.copyFiltered(h, meta.ID, n, limits[n], o.Filter); err != nil {
				return Manifest{}, err
			}
			af.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		m.Files = append(m.Files, af)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	header := func(n string, size int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: n, Size: size, Mode: 0o600, ModTime: m.Exported, Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(header(manifestName, int64(len(manifest)))); err != nil {
		return Manifest{}, err
	}
	if _, err := tw.Write(manifest); err != nil {
		return Manifest{}, err
	}
	for _, af := range m.Files {
		if err := tw.WriteHeader(header(meta.ID+"/"+af.Name, af.Size)); err != nil {
			return Manifest{}, err
		}
		if af.Name == metaName {
			if _, err := tw.Write(metaContent); err != nil {
				return Manifest{}, err
			}
			continue
		}
		h := sha256.New()
		n, err := s.copyFiltered(io.MultiWriter(tw, h), meta.ID, af.Name, limits[af.Name], o.Filter)
		if err == nil && (n != af.Size || hex.EncodeToString(h.Sum(nil)) != af.SHA256) {
			err = fmt.Errorf("session %s: %s changed while it was exported: export it again once nothing runs it", meta.ID, af.Name)
		}
		if err != nil {
			return Manifest{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Manifest{}, err
	}
	return m, gz.Close()
}

// portableNames lists the files of a session that go with it, in the
// order they are written: the snapshot before the log, so that the log
// holds every event the snapshot does.
func (s *Store) portableNames(id string, extra []string) ([]string, error) {
	rel := sessionRel(id)
	names := []string{metaName}
	for _, n := range append([]string{stateName, eventsName}, extra...) {
		st, err := s.lstat(rel + "/" + n)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		case st.Mode&unix.S_IFMT == unix.S_IFREG:
			names = append(names, n)
		default:
			return nil, &fs.PathError{Op: "export", Path: s.path(rel + "/" + n), Err: errors.New("is not a regular file")}
		}
	}
	phases, err := s.readDirNames(rel + "/transcripts")
	if errors.Is(err, fs.ErrNotExist) {
		return names, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(phases)
	for _, phase := range phases {
		if strings.HasPrefix(phase, ".") || !s.isDir(rel+"/transcripts/"+phase) {
			continue
		}
		files, err := s.readDirNames(rel + "/transcripts/" + phase)
		if err != nil {
			return nil, err
		}
		slices.Sort(files)
		for _, f := range files {
			n := "transcripts/" + phase + "/" + f
			if st, err := s.lstat(rel + "/" + n); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && !strings.HasPrefix(f, ".") {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

// size is the size of the file rel.
func (s *Store) size(rel string) (int64, error) {
	st, err := s.lstat(rel)
	return st.Size, err
}

// copyFiltered copies the first limit bytes of a file of session id
// through a new filter to w, and returns the bytes written.
func (s *Store) copyFiltered(w io.Writer, id, n string, limit int64, newFilter func() Filter) (int64, error) {
	f, err := s.openFile(sessionRel(id)+"/"+n, unix.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := io.LimitReader(f, limit)
	if newFilter == nil {
		return io.Copy(w, in)
	}
	filter := newFilter()
	var written int64
	buf := make([]byte, 256<<10)
	for {
		k, readErr := in.Read(buf)
		if k > 0 {
			out := filter.Write(buf[:k])
			m, err := w.Write(out)
			written += int64(m)
			if err != nil {
				return written, err
			}
		}
		if readErr == io.EOF {
			break
		}
		if readErr != nil {
			return written, readErr
		}
	}
	m, err := w.Write(filter.Flush())
	return written + int64(m), err
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ArchiveError is an archive that is not an exported session, or not one
// this store takes: nothing was written.
type ArchiveError struct{ Reason string }

func (e *ArchiveError) Error() string { return e.Reason }

func archiveErrorf(format string, args ...any) error {
	return &ArchiveError{Reason: fmt.Sprintf(format, args...)}
}

// ExistsError is a session imported whose id the store already has, with
// other content.
type ExistsError struct {
	ID   string
	Diff string // what differs, for the message
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("session %s is already here and differs from the one imported (%s)", e.ID, e.Diff)
}

// ImportOptions say what an import takes.
type ImportOptions struct {
	// CheckID checks the session's id (the session service's rule).
	CheckID func(string) error
	// Files are the files besides meta.json, state.json, events.jsonl and
	// the transcripts a session may bring (ExportOptions.Files).
	Files []string
	// MaxSize bounds the bytes of the session's files together; <= 0:
	// DefaultImportMaxSize.
	MaxSize int64
	// Replace replaces a session of the same id whose content differs
	// (not while it runs).
	Replace bool
	// Holder holds the locks a replacement takes.
	Holder Holder
}

// Imported says what Import did.
type Imported struct {
	Meta     Meta
	Manifest Manifest
	// Unchanged: the store had the very same session; nothing was written.
	Unchanged bool
	// Replaced: the store had another version of it, now replaced.
	Replaced bool
}

// Import reads an exported session from r into the store. A session of
// the same id with the same files is left as it is (Unchanged); with
// other files it is refused (*ExistsError) unless o.Replace. A bad
// archive is an *ArchiveError; nothing is written then.
//
// Cancelling ctx (an interrupt) stops it between two reads of r: what it
// wrote goes, and it returns ctx's error. Killed, it leaves its folder
// (.new-import-*), which the next Open of the store sweeps.
func (s *Store) Import(ctx context.Context, r io.Reader, o ImportOptions) (Imported, error) {
	reading, stop := context.WithCancel(ctx)
	defer stop()
	got, err := s.importArchive(ctx, newInterruptible(reading, r), o)
	if err != nil && ctx.Err() != nil {
		// Not a damaged archive: an interrupted read.
		return Imported{}, ctx.Err()
	}
	return got, err
}

func (s *Store) importArchive(ctx context.Context, r io.Reader, o ImportOptions) (Imported, error) {
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultImportMaxSize
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return Imported{}, archiveErrorf("not an exported session (pipeline export writes a gzip'd tar): %v", err)
	}
	tr := tar.NewReader(gz)
	m, err := readManifest(tr, o)
	if err != nil {
		return Imported{}, err
	}
	out := Imported{Manifest: m}
	sizes := map[string]ArchivedFile{}
	for _, f := range m.Files {
		sizes[f.Name] = f
	}
	// The id exactly, never a session it is the start of.
	var existing *Meta
	if s.isDir(sessionRel(m.Session)) {
		have, err := s.find(m.Session)
		if err != nil {
			return Imported{}, err
		}
		existing = &have
		here, err := s.manifestFiles(have, o.Files)
		if err != nil {
			return Imported{}, err
		}
		diff := filesDiff(here, m.Files)
		if diff == "" {
			out.Meta, out.Unchanged = have, true
			return out, nil
		}
		if !o.Replace {
			return Imported{}, &ExistsError{ID: m.Session, Diff: diff}
		}
	}

	tmp := sessionRel(newPrefix + "import-" + osrand.Hex(6))
	owned, err := s.mkdirOwned(tmp)
	if err != nil {
		return Imported{}, err
	}
	committed := false
	defer func() {
		if !committed {
			s.removeAll(tmp)
		}
		owned.Close()
	}()
	if err := s.extract(tr, tmp, m, sizes); err != nil {
		return Imported{}, err
	}
	// What follows the tar's end is its padding: read it, so that the gzip
	// stream's checksum is checked.
	if _, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		if ctx.Err() != nil {
			return Imported{}, ctx.Err()
		}
		return Imported{}, archiveErrorf("the archive is damaged: %v", err)
	}
	content, err := s.readFile(tmp + "/" + metaName)
	if err != nil {
		return Imported{}, err
	}
	meta, err := s.checkImportedMeta(content, m)
	if err != nil {
		return Imported{}, err
	}
	if err := s.checkImportedLog(tmp); err != nil {
		return Imported{}, err
	}
	sum := m.Summary
	sum.ID, sum.Key, sum.Pipeline, sum.File, sum.Spec, sum.Created = meta.ID, meta.Key, meta.Pipeline, meta.File, meta.Spec, meta.Created
	out.Meta = meta
	if existing != nil {
		if err := s.replace(*existing, meta, tmp, sum, o.Holder); err != nil {
			return Imported{}, err
		}
		committed, out.Replaced = true, true
		return out, nil
	}
	unlock, err := s.lockIndex()
	if err != nil {
		return Imported{}, err
	}
	defer unlock()
	if err := s.rename(tmp, sessionRel(meta.ID)); err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			// Imported meanwhile, by another import of the same archive
			// most often: the same files are the same session.
			return s.importedMeanwhile(meta.ID, o, out)
		}
		return Imported{}, err
	}
	committed = true
	if err := s.appendIndex(s.portable(sum).indexLine()); err != nil {
		s.removeAll(sessionRel(meta.ID))
		return Imported{}, err
	}
	return out, s.syncFile("sessions")
}

// importedMeanwhile is an import that found, when it came to put the
// session in its place, that the store had it by then: Unchanged if it
// holds the archive's files, else an *ExistsError.
func (s *Store) importedMeanwhile(id string, o ImportOptions, out Imported) (Imported, error) {
	have, err := s.find(id)
	if err != nil {
		return Imported{}, err
	}
	here, err := s.manifestFiles(have, o.Files)
	if err != nil {
		return Imported{}, err
	}
	if diff := filesDiff(here, out.Manifest.Files); diff != "" {
		return Imported{}, &ExistsError{ID: id, Diff: "it was made while the archive was read: " + diff}
	}
	out.Meta, out.Unchanged = have, true
	return out, nil
}

// interruptible reads r until ctx is done, at once even when a read of r
// waits (a pipe whose writer is silent): an import interrupted stops
// there, not at the end of a gigabyte or of its input. A goroutine reads
// r ahead, a chunk at a time; left waiting on r when ctx is done, it ends
// with that read.
type interruptible struct {
	ctx     context.Context
	chunks  chan readChunk
	free    chan []byte
	pending []byte
	last    []byte
	err     error
}

type readChunk struct {
	b   []byte
	err error
}

// chunkSize is what interruptible reads of r at a time.
const chunkSize = 256 << 10

func newInterruptible(ctx context.Context, r io.Reader) *interruptible {
	ir := &interruptible{ctx: ctx, chunks: make(chan readChunk), free: make(chan []byte, 2)}
	ir.free <- make([]byte, chunkSize)
	ir.free <- make([]byte, chunkSize)
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-ir.free:
			case <-ctx.Done():
				return
			}
			n, err := r.Read(buf)
			select {
			case ir.chunks <- readChunk{buf[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ir
}

func (ir *interruptible) Read(p []byte) (int, error) {
	for len(ir.pending) == 0 {
		if ir.err != nil {
			return 0, ir.err
		}
		if ir.last != nil {
			ir.free <- ir.last[:cap(ir.last)]
			ir.last = nil
		}
		select {
		case c := <-ir.chunks:
			ir.pending, ir.last, ir.err = c.b, c.b, c.err
		case <-ir.ctx.Done():
			return 0, ir.ctx.Err()
		}
	}
	n := copy(p, ir.pending)
	ir.pending = ir.pending[n:]
	return n, nil
}

// readManifest reads and checks the first entry of an archive.
func readManifest(tr *tar.Reader, o ImportOptions) (Manifest, error) {
	hdr, err := tr.Next()
	if err != nil {
		return Manifest{}, archiveErrorf("not an exported session: %v", err)
	}
	if hdr.Name != manifestName || !regular(hdr) {
		return Manifest{}, archiveErrorf("not an exported session: its first entry is %q, not %s", hdr.Name, manifestName)
	}
	if hdr.Size > maxManifest {
		return Manifest{}, archiveErrorf("%s is %d bytes, more than the %d a manifest may have", manifestName, hdr.Size, maxManifest)
	}
	content, err := io.ReadAll(tr)
	if err != nil {
		return Manifest{}, archiveErrorf("reading %s: %v", manifestName, err)
	}
	var m Manifest
	if err := json.Unmarshal(content, &m); err != nil {
		return Manifest{}, archiveErrorf("%s is not readable: %v", manifestName, err)
	}
	if m.Kind != ArchiveKind {
		return Manifest{}, archiveErrorf("not an exported session: %s says %q", manifestName, m.Kind)
	}
	if m.Format != ArchiveFormat {
		return Manifest{}, archiveErrorf("the archive is in format %d; this pipeline reads format %d: import it with the pipeline version that exported it", m.Format, ArchiveFormat)
	}
	if m.StoreFormat < OldestFormat || m.StoreFormat > Format {
		return Manifest{}, archiveErrorf("the session in the archive is in format %d; this pipeline reads formats %d to %d: import it with the pipeline version that exported it",
			m.StoreFormat, OldestFormat, Format)
	}
	if err := name(m.Session); err != nil || strings.HasPrefix(m.Session, ".") {
		return Manifest{}, archiveErrorf("%s names session %q: not a session id", manifestName, m.Session)
	}
	if o.CheckID != nil {
		if err := o.CheckID(m.Session); err != nil {
			return Manifest{}, archiveErrorf("%s names session %q: %v", manifestName, m.Session, err)
		}
	}
	var total int64
	seen := map[string]bool{}
	for _, f := range m.Files {
		if !importable(f.Name, o.Files) {
			return Manifest{}, archiveErrorf("%s lists %q, which is not a file of a session", manifestName, f.Name)
		}
		if seen[f.Name] {
			return Manifest{}, archiveErrorf("%s lists %q twice", manifestName, f.Name)
		}
		seen[f.Name] = true
		if _, err := hex.DecodeString(f.SHA256); err != nil || len(f.SHA256) != sha256.Size*2 {
			return Manifest{}, archiveErrorf("%s gives %q no SHA-256", manifestName, f.Name)
		}
		if f.Size < 0 || f.Size > o.MaxSize-total {
			return Manifest{}, archiveErrorf("the session's files hold more than %s (at %s): refused; pass a larger --max-size if you trust this archive",
				bytesText(o.MaxSize), f.Name)
		}
		total += f.Size
	}
	if !seen[metaName] {
		return Manifest{}, archiveErrorf("%s lists no %s", manifestName, metaName)
	}
	return m, nil
}

// importable reports whether n is a name an export writes: meta.json,
// state.json, events.jsonl, one of extra, or transcripts/PHASE/FILE.
func importable(n string, extra []string) bool {
	switch {
	case n == metaName || n == stateName || n == eventsName || slices.Contains(extra, n):
		return true
	case strings.HasPrefix(n, "transcripts/"):
		rest := strings.Split(strings.TrimPrefix(n, "transcripts/"), "/")
		return len(rest) == 2 && name(rest[0]) == nil && name(rest[1]) == nil &&
			!strings.HasPrefix(rest[0], ".") && !strings.HasPrefix(rest[1], ".")
	}
	return false
}

// regular reports whether a tar entry is a regular file.
func regular(hdr *tar.Header) bool {
	//lint:ignore SA1019 an old tar writes a regular file so; it is one.
	return hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeRegA
}

// extract writes the session's files from tr into the folder tmp: each
// one listed in the manifest, once, with its size and hash.
func (s *Store) extract(tr *tar.Reader, tmp string, m Manifest, files map[string]ArchivedFile) error {
	prefix := m.Session + "/"
	written := map[string]bool{}
	// Folders may come as entries of their own; anything more is not an
	// export's.
	entries, maxEntries := 0, 2*len(m.Files)+2
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return archiveErrorf("the archive is damaged: %v", err)
		}
		if entries++; entries > maxEntries {
			return archiveErrorf("the archive has more entries than its %s lists", manifestName)
		}
		if unsafePath(hdr.Name) {
			return archiveErrorf("entry %q is not a path inside the archive (absolute, or with ..): refused", hdr.Name)
		}
		rel, ok := strings.CutPrefix(hdr.Name, prefix)
		if !ok && hdr.Name != m.Session {
			return archiveErrorf("entry %q is not in the session's folder %s", hdr.Name, prefix)
		}
		if hdr.Typeflag == tar.TypeDir {
			dir := strings.TrimSuffix(rel, "/")
			if dir != "" && dir != "transcripts" && !(strings.HasPrefix(dir, "transcripts/") && importable(dir+"/x", nil)) {
				return archiveErrorf("entry %q is not a folder of a session", hdr.Name)
			}
			continue
		}
		if !regular(hdr) {
			return archiveErrorf("entry %q is %s: only regular files are imported", hdr.Name, entryKind(hdr.Typeflag))
		}
		f, listed := files[rel]
		if !listed {
			return archiveErrorf("entry %q is not listed in %s", hdr.Name, manifestName)
		}
		if written[rel] {
			return archiveErrorf("entry %q comes twice", hdr.Name)
		}
		written[rel] = true
		if hdr.Size != f.Size {
			return archiveErrorf("entry %q is %d bytes; %s says %d", hdr.Name, hdr.Size, manifestName, f.Size)
		}
		if err := s.writeImported(tmp, rel, tr, f); err != nil {
			return err
		}
	}
	for _, f := range m.Files {
		if !written[f.Name] {
			return archiveErrorf("%s lists %q, which the archive does not hold", manifestName, f.Name)
		}
	}
	return nil
}

// unsafePath reports whether an entry's name could lead out of the folder
// it is extracted into.
func unsafePath(n string) bool {
	if isAbs(n) || strings.ContainsRune(n, '\\') {
		return true
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func entryKind(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a named pipe"
	}
	return fmt.Sprintf("of type %q", flag)
}

// writeImported writes one file of an imported session, checked against
// its size and hash, and syncs it.
func (s *Store) writeImported(tmp, rel string, r io.Reader, f ArchivedFile) error {
	// transcripts/ and its phase's folder come with the first transcript
	// of the archive (a session of silent steps has none), as with a run.
	if dir, _, ok := cutLast(rel); ok {
		if strings.HasPrefix(dir, "transcripts/") {
			if err := s.mkdir(tmp + "/transcripts"); err != nil {
				return err
			}
		}
		if err := s.mkdir(tmp + "/" + dir); err != nil {
			return err
		}
	}
	out, err := s.openFile(tmp+"/"+rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	var h hash.Hash = sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, f.Size))
	if err == nil {
		err = out.Sync()
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return archiveErrorf("entry %q does not match its size and SHA-256 in %s: the archive is damaged", rel, manifestName)
	}
	return nil
}

func cutLast(rel string) (dir, last string, ok bool) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel, false
	}
	return rel[:i], rel[i+1:], true
}

// checkImportedMeta reads the imported meta.json as this store's: its id
// the manifest's, its paths relative, its key theirs.
func (s *Store) checkImportedMeta(content []byte, m Manifest) (Meta, error) {
	var raw Meta
	if err := json.Unmarshal(content, &raw); err != nil {
		return Meta{}, archiveErrorf("%s is not readable: %v", metaName, err)
	}
	if raw.Format < OldestFormat || raw.Format > Format {
		return Meta{}, archiveErrorf("%s is in format %d; this pipeline reads formats %d to %d", metaName, raw.Format, OldestFormat, Format)
	}
	if raw.ID != m.Session {
		return Meta{}, archiveErrorf("%s names session %q, the manifest %q", metaName, raw.ID, m.Session)
	}
	if isAbs(raw.File) || isAbs(raw.Spec) {
		return Meta{}, archiveErrorf("%s names its files by absolute paths (%q, %q): not an export's", metaName, raw.File, raw.Spec)
	}
	if raw.Format == Format && raw.Key != key(raw.File, raw.Spec) {
		return Meta{}, archiveErrorf("%s: its key %q is not the one of its paths", metaName, raw.Key)
	}
	meta, err := s.parseMeta(content)
	if err != nil {
		return Meta{}, archiveErrorf("%v", err)
	}
	return meta, nil
}

func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || len(p) > 1 && p[1] == ':'
}

// checkImportedLog reads the imported event log: whole lines, numbered
// from 1 in order, each a JSON object; and the snapshot, if any.
func (s *Store) checkImportedLog(tmp string) error {
	// lastState: the log's last stop carrying its state, which must not
	// follow state.json's (see ReadSnapshotFile).
	var lastState int64
	f, err := s.openFile(tmp+"/"+eventsName, unix.O_RDONLY, 0)
	if err == nil {
		defer f.Close()
		x := &Session{store: s, rel: tmp, Meta: Meta{ID: "in the archive"}, readOnly: true}
		var last int64
		end, err := x.scan(func(seq int64, line []byte) error {
			if isStateLine(line) {
				lastState = seq
			}
			if seq != last+1 || !json.Valid(line) {
				return archiveErrorf("%s line %d is not event %d of a log", eventsName, last+1, last+1)
			}
			if err := checkStateLine(line); err != nil {
				return archiveErrorf("%s line %d: %v", eventsName, seq, err)
			}
			last = seq
			return nil
		})
		if err != nil {
			var archiveErr *ArchiveError
			if errors.As(err, &archiveErr) {
				return err
			}
			return archiveErrorf("%v", err)
		}
		if info, err := f.Stat(); err != nil || info.Size() != end {
			return archiveErrorf("%s ends in part of a line", eventsName)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	content, err := s.readFile(tmp + "/" + stateName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var snap snapshot
	if err := json.Unmarshal(content, &snap); err != nil {
		return archiveErrorf("%s is not readable: %v", stateName, err)
	}
	if snap.Format < OldestFormat || snap.Format > Format {
		return archiveErrorf("%s is in format %d; this pipeline reads formats %d to %d", stateName, snap.Format, OldestFormat, Format)
	}
	if lastState > snap.Seq {
		return archiveErrorf("%s line %d carries a stop's state later than %s's (event %d): no pipeline writes that", eventsName, lastState, stateName, snap.Seq)
	}
	return nil
}

// manifestFiles lists a session's files as an export would, unfiltered.
func (s *Store) manifestFiles(meta Meta, extra []string) ([]ArchivedFile, error) {
	names, err := s.portableNames(meta.ID, extra)
	if err != nil {
		return nil, err
	}
	metaContent, err := s.metaJSON(meta)
	if err != nil {
		return nil, err
	}
	var out []ArchivedFile
	for _, n := range names {
		if n == metaName {
			out = append(out, ArchivedFile{Name: n, Size: int64(len(metaContent)), SHA256: sha(metaContent)})
			continue
		}
		h := sha256.New()
		size, err := s.copyFiltered(h, meta.ID, n, 1<<62, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ArchivedFile{Name: n, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return out, nil
}

// filesDiff says how two lists of a session's files differ; "" when they
// do not.
func filesDiff(here, there []ArchivedFile) string {
	byName := map[string]ArchivedFile{}
	for _, f := range here {
		byName[f.Name] = f
	}
	var diffs []string
	for _, f := range there {
		h, ok := byName[f.Name]
		delete(byName, f.Name)
		switch {
		case !ok:
			diffs = append(diffs, f.Name+" only in the archive")
		case h.SHA256 != f.SHA256:
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes here, %d in the archive", f.Name, h.Size, f.Size))
		}
	}
	for _, f := range here {
		if _, ok := byName[f.Name]; ok {
			diffs = append(diffs, f.Name+" only here")
		}
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

// replace puts the imported session in tmp in the place of the one the
// store has, under both sessions' locks: not while either runs.
func (s *Store) replace(old, meta Meta, tmp string, sum Summary, holder Holder) error {
	keys := []string{old.Key}
	if meta.Key != old.Key {
		keys = append(keys, meta.Key)
	}
	for _, k := range keys {
		lock, err := s.Lock(k, holder)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	gone := sessionRel(removedPrefix + old.ID)
	unlock, err := s.lockIndex()
	if err != nil {
		return err
	}
	if err := s.rename(sessionRel(old.ID), gone); err != nil {
		unlock()
		return err
	}
	if err := s.rename(tmp, sessionRel(meta.ID)); err != nil {
		if backErr := s.rename(gone, sessionRel(old.ID)); backErr != nil {
			err = errors.Join(err, backErr)
		}
		unlock()
		return err
	}
	if err := s.appendIndex(s.portable(sum).indexLine()); err != nil {
		// Not listed, the new one would be lost: the old one goes back.
		err = errors.Join(err, s.rename(sessionRel(meta.ID), tmp), s.rename(gone, sessionRel(old.ID)))
		unlock()
		return err
	}
	unlock()
	if err := s.syncFile("sessions"); err != nil {
		return err
	}
	return s.removeAll(gone)
}

// bytesText writes a size in the largest binary unit that divides it.
func bytesText(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
