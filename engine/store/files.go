package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"path/filepath"
	"sort"
)

// What other packages read of a session's files (the search index):
// found and opened from the store's folder like every other file, no link
// followed, nothing written.

// SessionFile is a file of a session as a reader of its history sees it:
// the snapshot, or a transcript or prompt file of one attempt of a step.
type SessionFile struct {
	// Rel is the file inside the session's folder, slash-separated:
	// "state.json", "transcripts/design/1-agent.log".
	Rel string
	// Phase, Attempt and Step are those of a transcript or prompt file,
	// read from its name (<phase>/<attempt>-<step>.log or .prompt).
	Phase   string
	Attempt int
	Step    string
	// Prompt: the prompts sent to the step, not its transcript.
	Prompt  bool
	Size    int64
	ModTime time.Time
	// Inode tells a file replaced by another of the same name.
	Inode uint64
}

// StateFile is the name of a session's snapshot, whose state holds the
// phases' notes and summaries.
const StateFile = stateName

// StepFiles lists the transcript and prompt files of session id with
// their size, time and inode, phase by phase in name order. A session
// without transcripts has none; a file whose name is not one the store
// makes is left out.
func (s *Store) StepFiles(id string) ([]SessionFile, error) {
	if err := sessionName(id); err != nil {
		return nil, err
	}
	rel := sessionRel(id) + "/transcripts"
	phases, err := s.readDirNames(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SessionFile
	for _, phase := range phases {
		if strings.HasPrefix(phase, ".") {
			continue
		}
		dir, err := s.openFile(rel+"/"+phase, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue // gone meanwhile, or not a folder
		}
		if err != nil {
			return nil, err
		}
		names, err := dir.Readdirnames(-1)
		if err != nil {
			dir.Close()
			return nil, err
		}
		for _, n := range names {
			attempt, step, prompt, ok := stepFileName(n)
			if !ok {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(int(dir.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue // gone meanwhile, or not a regular file
			}
			out = append(out, SessionFile{Rel: "transcripts/" + phase + "/" + n, Phase: phase, Attempt: attempt, Step: step,
				Prompt: prompt, Size: st.Size, ModTime: time.Unix(st.Mtim.Unix()), Inode: st.Ino})
		}
		dir.Close()
	}
	return out, nil
}

// stepFileName reads <attempt>-<step>.log or <attempt>-<step>.prompt.
func stepFileName(n string) (attempt int, step string, prompt, ok bool) {
	base, isLog := strings.CutSuffix(n, ".log")
	if !isLog {
		if base, prompt = strings.CutSuffix(n, PromptExt); !prompt {
			return 0, "", false, false
		}
	}
	number, step, found := strings.Cut(base, "-")
	attempt, err := strconv.Atoi(number)
	if !found || err != nil || attempt < 1 || step == "" {
		return 0, "", false, false
	}
	return attempt, step, prompt, true
}

// StatSessionFile reports the size, time and inode of the file rel of
// session id; a file not there is fs.ErrNotExist.
func (s *Store) StatSessionFile(id, rel string) (SessionFile, error) {
	if err := sessionName(id); err != nil {
		return SessionFile{}, err
	}
	st, err := s.lstat(sessionRel(id) + "/" + rel)
	if err != nil {
		return SessionFile{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return SessionFile{}, &fs.PathError{Op: "stat", Path: s.path(sessionRel(id) + "/" + rel), Err: errors.New("is not a regular file")}
	}
	return SessionFile{Rel: rel, Size: st.Size, ModTime: time.Unix(st.Mtim.Unix()), Inode: st.Ino}, nil
}

// OpenSessionFile opens the file rel of session id for reading.
func (s *Store) OpenSessionFile(id, rel string) (*os.File, error) {
	if err := sessionName(id); err != nil {
		return nil, err
	}
	return s.openFile(sessionRel(id)+"/"+rel, unix.O_RDONLY, 0)
}

// sessionName checks that id names a session's folder: one name inside
// the sessions folder (not ../../x, not a/b), not one being made or
// removed, and printable on one line.
func sessionName(id string) error {
	if err := name(id); err != nil || strings.HasPrefix(id, ".") || !printable(id) {
		return fmt.Errorf("bad session id %q", id)
	}
	return nil
}

// printable tells whether s is all graphic characters and no space. Every
// line of the index is checked: an ASCII id, as pipeline makes them, is
// checked a byte at a time, without unicode's tables.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf {
			return !strings.ContainsFunc(s, nonPrintable)
		} else if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

func nonPrintable(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }

// Folder makes (0700, if it is not there) the folder n of the store's
// own, beside sessions, for what another package keeps there (the search
// index), and returns its path. Nothing in the store reads or lists it:
// sessions, clean, export and import go by the sessions folder and the
// index alone.
func (s *Store) Folder(n string) (string, error) {
	if err := name(n); err != nil || strings.HasPrefix(n, ".") {
		return "", fmt.Errorf("bad folder name %q", n)
	}
	switch n {
	case "sessions", "locks", keysFolder:
		return "", fmt.Errorf("the folder %q is the store's own", n)
	}
	if err := s.mkdir(n); err != nil {
		return "", err
	}
	return s.path(n), nil
}

// OrderedStepFiles lists the transcript files below root (a session's
// transcripts folder), and with prompts the prompt files, in phase order
// (order), then attempt, then step, a step's prompt before its
// transcript; of one phase, or of all when phase is "".
func OrderedStepFiles(root, phase string, order map[string]int, prompts bool) []string {
	paths, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	if prompts {
		more, _ := filepath.Glob(filepath.Join(root, "*", "*"+PromptExt))
		paths = append(paths, more...)
	}
	var out []string
	for _, p := range paths {
		if phase == "" || filepath.Base(filepath.Dir(p)) == phase {
			out = append(out, p)
		}
	}
	attempt := func(p string) int {
		n, _ := strconv.Atoi(strings.SplitN(filepath.Base(p), "-", 2)[0])
		return n
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := order[filepath.Base(filepath.Dir(out[i]))], order[filepath.Base(filepath.Dir(out[j]))]
		if pi != pj {
			return pi < pj
		}
		if ai, aj := attempt(out[i]), attempt(out[j]); ai != aj {
			return ai < aj
		}
		si, sj := strings.TrimSuffix(out[i], filepath.Ext(out[i])), strings.TrimSuffix(out[j], filepath.Ext(out[j]))
		if si != sj {
			return si < sj
		}
		return filepath.Ext(out[i]) == PromptExt
	})
	return out
}
