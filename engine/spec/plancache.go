package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The plan cache: a plan loaded once is kept, checked and merged, under
// the digest of what it was made from, so that the commands that load a
// session's plan at each call (status, resume, logs, the watcher) do not
// parse and compile a phases.yaml of a thousand phases each time.
//
// An entry is never trusted: its name is a digest of this binary's build
// ID, phases.yaml's path and bytes, the spec asked for and the working
// folder; it holds that digest again, the digest of the spec's
// frontmatter it was made with, and a checksum of the plan. Any of those
// that differs, a spec whose frontmatter changed, a file that is not
// ours, a payload cut short or one that does not decode: the plan is
// loaded from the files, as without a cache, and the entry written
// again. The program warnings look at the file system, so they are
// checked at each load, not cached; the expressions compile at their
// first use (see Expr.Program).
//
// What reads or writes files here is written as functions, not methods:
// the engine's purity test takes every method of this package for one
// the engine may call.

// CacheDir is the folder of the plan cache the commands share:
// pipeline/plans in the user's cache folder ($XDG_CACHE_HOME or
// ~/.cache, ~/Library/Caches on macOS); "" (no cache) when there is
// none. Outside the sessions' store, so that status, logs and sessions
// write nothing there.
func CacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pipeline", "plans")
}

// cacheMagic starts every entry; its version changes with the layout
// (3: the checksums are CRC-32 IEEE).
const cacheMagic = "pipeline plan cache 3\n"

// maxCacheEntries is how many plans a cache folder keeps; the oldest go
// first.
const maxCacheEntries = 256

// LoadCached is Load with the plan cache in dir: a plan cached there from
// the same files is read rather than made, and a plan made is cached
// there. dir "" is no cache. A cache that cannot be read or written is
// never an error: the plan is loaded as Load loads it.
func LoadCached(path, specPath, dir string) (*Plan, error) {
	// Without a working directory (it was removed) relative paths stay
	// relative, as filepath.Abs would fail and leave them.
	base, _ := os.Getwd()
	m, err := loadThroughCache(path, specPath, dir, base, false)
	if err != nil {
		return nil, err
	}
	return withWarnings(m, base), nil
}

// PlanHead is what a plan says of the pipeline as a whole, without its
// phases: what a command that only finds a session, or chooses the
// backend it runs on, reads (see LoadCachedHead).
type PlanHead struct {
	File    string
	Name    Setting[string]
	Spec    string
	Backend Setting[Backend]
	Digest  string
}

// Head is the plan's head.
func (p *Plan) Head() *PlanHead {
	return &PlanHead{File: p.File, Name: p.Name, Spec: p.Spec, Backend: p.Backend, Digest: p.Digest}
}

// LoadCachedHead is LoadCached for a caller that reads only the plan's
// head: one read from the cache costs no decoding of its phases, which
// is most of a large plan's. Its errors are LoadCached's: files that
// are not cached are loaded whole, their problems said, and cached.
func LoadCachedHead(path, specPath, dir string) (*PlanHead, error) {
	base, _ := os.Getwd()
	m, err := loadThroughCache(path, specPath, dir, base, true)
	if err != nil {
		return nil, err
	}
	return m.head, nil
}

// loadThroughCache is the plan at path as this process loaded it before,
// or as the cache in dir holds it, or made from the files (and cached).
// headOnly: a memo of the plan's head alone will do.
func loadThroughCache(path, specPath, dir, base string, headOnly bool) (*memo, error) {
	if dir != "" && headOnly {
		// A head is found by the file's digest alone: the file is not
		// read into memory (the whole plan's errors and digests need it).
		if key := fileKey(path, specPath, base); key != "" {
			if m := recall(loaded, key, true); m != nil {
				return m, nil
			}
			if m := readEntry(cacheEntry{dir: dir, key: key, file: path}, base, true); m != nil {
				remember(loaded, key, m)
				return m, nil
			}
		}
	}
	content, err := readPhasesFile(path)
	if err != nil {
		return nil, err
	}
	entry := cacheEntry{dir: dir, file: path, content: content}
	if dir != "" {
		entry.key = cacheKey(path, specPath, base, content)
	}
	if m := recall(loaded, entry.key, headOnly); m != nil {
		return m, nil
	}
	m := readEntry(entry, base, headOnly)
	if m == nil {
		doc, err := Parse(path, content)
		if doc == nil {
			return nil, err
		}
		plan, refs, specSum, err := load(doc, specPath, base)
		if err != nil {
			return nil, err
		}
		writeEntry(entry, plan, refs, specSum)
		m = &memo{made: plan, head: plan.Head(), refs: refs, specSum: specSum}
	}
	remember(loaded, entry.key, m)
	return m, nil
}

// memo is a plan this process has loaded through the cache, without the
// warnings of its programs; or, for LoadCachedHead, its head alone (made
// nil). A plan is never changed once made (the methods that change one,
// such as WithoutHumanGates, copy it), so the commands that load it
// twice (the session's key, then the session) and the watcher share it.
type memo struct {
	made    *Plan
	head    *PlanHead
	refs    []programRef
	specSum [sha256.Size]byte
}

// withWarnings is a copy of the memo's plan with the program warnings of now.
func withWarnings(m *memo, base string) *Plan {
	p := *m.made
	p.Warnings = append(slices.Clip(m.made.Warnings), checkPrograms(m.refs, p.File, base)...)
	return &p
}

// memos are the plans a process loaded through the cache, by key; a
// spec whose frontmatter has changed since is loaded again.
type memos struct {
	mu   sync.Mutex
	byID map[string]*memo
}

var loaded = &memos{}

// maxMemos bounds what a long-lived process (the watcher) keeps.
const maxMemos = 16

// recall is the memo of key; nil when there is none, when its spec's
// frontmatter changed since, or when it holds the head alone and
// headOnly is false.
func recall(ms *memos, key string, headOnly bool) *memo {
	if key == "" {
		return nil
	}
	ms.mu.Lock()
	m := ms.byID[key]
	ms.mu.Unlock()
	if m == nil || (m.made == nil && !headOnly) || !specUnchanged(m) {
		return nil
	}
	return m
}

func remember(ms *memos, key string, m *memo) {
	if key == "" {
		return
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.byID) >= maxMemos {
		clear(ms.byID)
	}
	if ms.byID == nil {
		ms.byID = map[string]*memo{}
	}
	ms.byID[key] = m
}

// specUnchanged reports whether the memo's spec has the frontmatter it
// was made with.
func specUnchanged(m *memo) bool {
	if m.head.Spec == "" {
		return true
	}
	sum, ok := specSumOf(m.head.Spec)
	return ok && sum == m.specSum
}

// specSumOf is the digest of the frontmatter of the spec at path.
func specSumOf(path string) (sum [sha256.Size]byte, ok bool) {
	content, _, err := readHead(path, maxYAMLBytes+frontmatterSlack)
	if err != nil {
		return sum, false
	}
	block, _, _ := frontmatterBlock(content)
	return frontmatterSum(block), true
}

// cacheKey names an entry: what Load makes a plan of, but the spec's
// frontmatter, which the entry records (phases.yaml names the spec).
func cacheKey(path, specPath, base string, content []byte) string {
	h := keyHash(path, specPath, base)
	if h == nil {
		return ""
	}
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// fileKey is cacheKey of the file at path as it is now, read through the
// digest rather than into memory; "" when it cannot be read whole (the
// file is then loaded as without a cache, and its problems said).
func fileKey(path, specPath, base string) string {
	h := keyHash(path, specPath, base)
	if h == nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	if n, err := io.CopyBuffer(h, io.LimitReader(f, maxYAMLBytes+1), *buf); err != nil || n > maxYAMLBytes {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keyHash is the digest of a key's parts before phases.yaml's bytes; nil
// when this binary's build ID is not known: no way then to tell its plans
// from another's.
func keyHash(path, specPath, base string) hash.Hash {
	id := buildID()
	if id == "" {
		return nil
	}
	h := sha256.New()
	// Each part as "%d %s\n" would write it, without fmt, whose look at
	// h and at its arguments' methods builds itabs at a process's first
	// use.
	var line []byte
	for _, part := range []string{cacheMagic, id, path, specPath, base} {
		line = strconv.AppendInt(line[:0], int64(len(part)), 10)
		line = append(append(append(line, ' '), part...), '\n')
		h.Write(line)
	}
	return h
}

// cacheEntry is the entry of one phases.yaml in a cache folder.
type cacheEntry struct {
	dir, key, file string
	content        []byte
}

// header is what an entry holds before its plan: the key, the digest of
// the spec's frontmatter (zero without a spec), then the length and
// checksum of the plan's head (see encodePlan) and of the whole plan. A
// reader of the head alone reads and checks that much of the entry.
const headerSize = len(cacheMagic) + sha256.Size + sha256.Size + 4*4

// entryFile is what a cache entry holds, read and checked against its
// checksums and lengths: the payload, or its head alone.
type entryFile struct {
	key, specSum [sha256.Size]byte
	payload      string
	headLen      int
}

// checksum is an entry's check against a torn or damaged file: CRC-32
// IEEE, whose tables cost a process 15 µs at its first use where
// Castagnoli's (cache format 2) cost 0.2 to 0.6 ms, paid by every run.
func checksum(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// readEntry is the memo of the cached plan, or of its head alone when
// headOnly; nil when there is none to trust.
func readEntry(c cacheEntry, base string, headOnly bool) *memo {
	if c.key == "" {
		return nil
	}
	f, ok := readEntryFile(filepath.Join(c.dir, c.key), headOnly)
	if !ok || hex.EncodeToString(f.key[:]) != c.key {
		return nil
	}
	head, ok := decodeHead(f.payload[:f.headLen])
	if !ok {
		return nil
	}
	sources := map[string]func() []string{c.file: linesOnce(c.content)}
	if head.Spec != "" {
		specContent, _, err := readHead(head.Spec, maxYAMLBytes+frontmatterSlack)
		if err != nil {
			return nil
		}
		block, _, _ := frontmatterBlock(specContent)
		if frontmatterSum(block) != f.specSum {
			return nil
		}
		sources[head.Spec] = linesOnce(specContent)
	} else if f.specSum != ([sha256.Size]byte{}) {
		return nil
	}
	if headOnly {
		return &memo{head: head.Head(), specSum: f.specSum}
	}
	plan, refs, ok := decodePlan(f.payload, func(file string) func() []string {
		if lines, ok := sources[file]; ok {
			return lines
		}
		return func() []string { return nil }
	})
	if !ok {
		return nil
	}
	plan.redigest = redigester(c.content, plan.File, plan.Spec, base)
	return &memo{made: plan, head: plan.Head(), refs: refs, specSum: f.specSum}
}

// writeEntry caches plan, made from the entry's files and a spec of the
// frontmatter digest specSum; refs are its programs.
func writeEntry(c cacheEntry, plan *Plan, refs []programRef, specSum [sha256.Size]byte) {
	if c.key == "" {
		return
	}
	payload, headLen, err := encodePlan(plan, refs)
	if err != nil {
		return
	}
	key, _ := hex.DecodeString(c.key)
	out := make([]byte, 0, headerSize+len(payload))
	out = append(out, cacheMagic...)
	out = append(out, key...)
	out = append(out, specSum[:]...)
	out = appendUint32(out, uint32(headLen))
	out = appendUint32(out, checksum(payload[:headLen]))
	out = appendUint32(out, uint32(len(payload)))
	out = appendUint32(out, checksum(payload))
	out = append(out, payload...)
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	// No fsync: an entry lost in a crash is made again, and one cut short
	// fails its checksum.
	f, err := os.CreateTemp(c.dir, ".plan-*")
	if err != nil {
		return
	}
	_, err = f.Write(out)
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.dir, c.key))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	evictOldEntries(c.dir)
}

// frontmatterSum is the digest of a spec's frontmatter block; a spec
// without one has the digest of no bytes, never zero.
func frontmatterSum(block []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte("frontmatter\n"), block...))
}

// readEntryFile reads a cache entry, a regular file of the current user
// that nobody else may write, and checks it against the lengths and
// checksums of its header: the whole payload, or its head alone when
// headOnly. ok is false for any other file (or none). The payload is
// read into a string, not copied into one: the plan's strings are
// pieces of it.
func readEntryFile(path string, headOnly bool) (e entryFile, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return e, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o022 != 0 || !ownedByMe(info) || info.Size() > 64<<20 {
		return e, false
	}
	var header [headerSize]byte
	if _, err := io.ReadFull(f, header[:]); err != nil || string(header[:len(cacheMagic)]) != cacheMagic {
		return e, false
	}
	rest := header[len(cacheMagic):]
	e.key, e.specSum = [sha256.Size]byte(rest), [sha256.Size]byte(rest[sha256.Size:])
	sums := rest[2*sha256.Size:]
	headLen, headSum, size, sum := beUint32(sums), beUint32(sums[4:]), beUint32(sums[8:]), beUint32(sums[12:])
	if info.Size() != int64(headerSize)+int64(size) || headLen > size {
		return e, false
	}
	if headOnly {
		size, sum = headLen, headSum
	}
	e.payload, ok = readChecked(f, int(size), sum)
	e.headLen = int(headLen)
	return e, ok && (headOnly || checksum([]byte(e.payload[:headLen])) == headSum)
}

// copyBuffers are what the cache reads files through: the three loads
// of a status each took one of io.Copy's 32 KiB.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readChecked reads n bytes of r into a string, and reports whether
// they have the checksum sum.
func readChecked(r io.Reader, n int, sum uint32) (string, bool) {
	var b strings.Builder
	b.Grow(n)
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// A chunk at a time into the string and the checksum, without
	// io.MultiWriter and io.CopyBuffer, whose interfaces built itabs at
	// a process's first use.
	var crc uint32
	for left := n; left > 0; {
		chunk := (*buf)[:min(left, len(*buf))]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return "", false
		}
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
		b.Write(chunk)
		left -= len(chunk)
	}
	return b.String(), crc == sum
}

// evictSlack is how many entries past maxCacheEntries a cache folder may
// hold before its oldest go. An eviction looks at the age of every entry
// (an lstat each, 1 ms of a run's CPU for 257): with no slack, a folder
// kept at maxCacheEntries paid it at every new plan, as each run of a
// new or changed phases.yaml (a fleet's clients, a hundred at once, one
// each) does; now once every evictSlack new plans.
const evictSlack = 32

// evictOldEntries keeps the newest maxCacheEntries entries of dir once it
// holds more than maxCacheEntries+evictSlack.
func evictOldEntries(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= maxCacheEntries+evictSlack {
		return
	}
	type aged struct {
		name string
		mod  int64
	}
	var all []aged
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			all = append(all, aged{e.Name(), info.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return int(b.mod>>20 - a.mod>>20) })
	for _, e := range all[min(maxCacheEntries, len(all)):] {
		os.Remove(filepath.Join(dir, e.name))
	}
}

// linesOnce splits content into lines at the first call.
func linesOnce(content []byte) func() []string {
	return sync.OnceValue(func() []string {
		return strings.Split(strings.TrimPrefix(string(content), byteOrderMark), "\n")
	})
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// buildID is this binary's Go build ID, which changes with any change of
// its code: a plan cached by another build is never read. "" when it
// cannot be found.
func buildID() string {
	ownBuildID.once.Do(func() { ownBuildID.id = readBuildID() })
	return ownBuildID.id
}

var ownBuildID struct {
	once sync.Once
	id   string
}

func readBuildID() string {
	if id := mappedBuildID(); id != "" {
		return id
	}
	return fileBuildID()
}

// fileBuildID is the Go build ID read from the executable's file.
func fileBuildID() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	// The ID is in the first pages (an ELF note ends before 4 KiB): the
	// first 8 KiB are read, and more only when it is not there.
	var head []byte
	for _, size := range []int{8 << 10, 64 << 10} {
		more := make([]byte, size-len(head))
		n, _ := io.ReadFull(f, more)
		head = append(head, more[:n]...)
		if id := findBuildID(head); id != "" || n < len(more) {
			return id
		}
	}
	return ""
}

// findBuildID finds the Go build ID in the first bytes of an executable:
// in its ELF note (namesz 4, descsz, type 4, "Go\0\0", the ID), or after
// the marker the linker writes at the start of the text of other formats.
func findBuildID(head []byte) string {
	if i := bytes.Index(head, []byte("\x04\x00\x00\x00Go\x00\x00")); i >= 4 {
		size := int(head[i-4]) | int(head[i-3])<<8
		if start := i + 8; start+size <= len(head) && size > 0 {
			return string(head[start : start+size])
		}
	}
	const marker = "\xff Go build ID: \""
	if i := bytes.Index(head, []byte(marker)); i >= 0 {
		rest := head[i+len(marker):]
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			return string(rest[:end])
		}
	}
	return ""
}
