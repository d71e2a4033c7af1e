package engine

import (
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// WorkingSet is what a session knows that matters beyond one native
// conversation: the summary of where the work stands, the facts pinned,
// the decisions made, the tasks open and done, and the files touched,
// each with the phase and time it came from. It is fed by the markers an
// agent prints ([DECISION], [FACT], [TODO], [DONE], [SUMMARY]), by the
// files each phase changed, by the phase summaries, by a compaction's
// answer, and by the human (pipeline memory). It lives in State, so every
// change is an event of the log and a replay rebuilds it.
type WorkingSet struct {
	// Summary holds the latest summary of each phase, in phase order.
	Summary   []MemoryItem `json:"summary,omitempty"`
	Pinned    []MemoryItem `json:"pinned_facts,omitempty"`
	Decisions []MemoryItem `json:"decisions,omitempty"`
	Open      []MemoryItem `json:"open_tasks,omitempty"`
	Done      []MemoryItem `json:"done_tasks,omitempty"`
	Files     []FileTouch  `json:"files_touched,omitempty"`
	// LastID numbers the items: pipeline memory unpin N and task done N
	// name an item by it.
	LastID int `json:"last_id,omitempty"`
}

// MemoryItem is one entry of the working set.
type MemoryItem struct {
	ID    int       `json:"id"`
	Text  string    `json:"text"`
	Phase string    `json:"phase,omitempty"`
	At    time.Time `json:"at"`
	// Source says who wrote it: agent (a marker), human (pipeline
	// memory), compaction (the agent's answer to the compaction prompt),
	// phase (a phase's summary, when the agent printed no [SUMMARY]).
	Source string `json:"source"`
	// Closed is when a done task was closed, and by what text.
	Closed   *time.Time `json:"closed,omitempty"`
	ClosedBy string     `json:"closed_by,omitempty"`
}

// FileTouch is a file a phase changed, the latest time it was seen so.
type FileTouch struct {
	Path  string    `json:"path"`
	Phase string    `json:"phase,omitempty"`
	At    time.Time `json:"at"`
}

// Sources of a working-set entry.
const (
	SourceAgent      = "agent"
	SourceHuman      = "human"
	SourceCompaction = "compaction"
	SourcePhase      = "phase"
)

// Memory note kinds: what a Remembered event does to the working set.
// The first five are the markers' own (lower case); unpin removes a
// pinned fact by its id or text.
const (
	NoteDecision = "decision"
	NoteFact     = "fact"
	NoteTodo     = "todo"
	NoteDone     = "done"
	NoteSummary  = "summary"
	NoteUnpin    = "unpin"
)

// MemoryNote is one change to the working set.
type MemoryNote struct {
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// ID names an item for unpin and done (pipeline memory unpin 3).
	ID int `json:"id,omitempty"`
}

// Remembered changes the working set: markers an agent printed (Source
// agent, as they came, while the step ran), or a human's pipeline memory.
// Phase is the phase they belong to.
type Remembered struct {
	At     time.Time
	Phase  string `json:",omitempty"`
	Source string
	Notes  []MemoryNote
}

func (e Remembered) eventTime() time.Time { return e.At }

// The most items each list keeps: a state that grows with every marker
// would make every record slower than the last. The oldest go first,
// except human pins, which only unpin removes.
const (
	maxMemoryItems  = 200
	maxFilesTouched = 1000
	// MaxMemoryText bounds the text of one item, in bytes.
	MaxMemoryText = 1024
)

func (w WorkingSet) clone() WorkingSet {
	w.Summary = slices.Clip(slices.Clone(w.Summary))
	w.Pinned = slices.Clip(slices.Clone(w.Pinned))
	w.Decisions = slices.Clip(slices.Clone(w.Decisions))
	w.Open = slices.Clip(slices.Clone(w.Open))
	w.Done = slices.Clip(slices.Clone(w.Done))
	w.Files = slices.Clip(slices.Clone(w.Files))
	return w
}

// Empty reports whether nothing was remembered.
func (w WorkingSet) Empty() bool {
	return len(w.Summary)+len(w.Pinned)+len(w.Decisions)+len(w.Open)+len(w.Done)+len(w.Files) == 0
}

// Remember applies one note, from source, in phase, at at.
func (w *WorkingSet) Remember(n MemoryNote, phase, source string, at time.Time) {
	text := clipText(strings.TrimSpace(n.Text))
	item := func() MemoryItem {
		w.LastID++
		return MemoryItem{ID: w.LastID, Text: text, Phase: phase, At: at, Source: source}
	}
	switch n.Kind {
	case NoteDecision:
		if text != "" && !containsText(w.Decisions, text) {
			w.Decisions = keepNewest(append(w.Decisions, item()), nil)
		}
	case NoteFact:
		if text != "" && !containsText(w.Pinned, text) {
			w.Pinned = keepNewest(append(w.Pinned, item()), func(m MemoryItem) bool { return m.Source == SourceHuman })
		}
	case NoteTodo:
		if text != "" && !containsText(w.Open, text) {
			w.Open = keepNewest(append(w.Open, item()), func(m MemoryItem) bool { return m.Source == SourceHuman })
		}
	case NoteDone:
		w.closeTask(n, text, phase, source, at, item)
	case NoteSummary:
		if text == "" {
			return
		}
		i := slices.IndexFunc(w.Summary, func(m MemoryItem) bool { return m.Phase == phase })
		if i >= 0 && source == SourcePhase && w.Summary[i].Source != SourcePhase {
			// The agent's own [SUMMARY] of the phase stands over the
			// phase's last line of output.
			return
		}
		if i >= 0 {
			id := w.Summary[i].ID
			w.Summary[i] = MemoryItem{ID: id, Text: text, Phase: phase, At: at, Source: source}
			return
		}
		w.Summary = keepNewest(append(w.Summary, item()), nil)
	case NoteUnpin:
		w.Pinned = slices.DeleteFunc(w.Pinned, func(m MemoryItem) bool {
			return (n.ID != 0 && m.ID == n.ID) || (n.ID == 0 && text != "" && normalText(m.Text) == normalText(text))
		})
	}
}

// closeTask closes the open task a [DONE] names: by its id, its exact
// text, or the closest match (see closeness). A [DONE] that matches no
// open task is kept as a done task of its own, so the work shows.
func (w *WorkingSet) closeTask(n MemoryNote, text, phase, source string, at time.Time, item func() MemoryItem) {
	best := -1
	switch {
	case n.ID != 0:
		best = slices.IndexFunc(w.Open, func(m MemoryItem) bool { return m.ID == n.ID })
	case text != "":
		best = MatchTask(w.Open, text)
	}
	if best < 0 {
		if text == "" || containsText(w.Done, text) {
			return
		}
		done := item()
		closed := at
		done.Closed, done.ClosedBy = &closed, text
		w.Done = keepNewest(append(w.Done, done), nil)
		return
	}
	task := w.Open[best]
	w.Open = slices.Delete(w.Open, best, best+1)
	closed := at
	task.Closed, task.ClosedBy = &closed, text
	w.Done = keepNewest(append(w.Done, task), nil)
}

// Only is the working set with only the items keep keeps (and the files
// of the phases it keeps), numbered as they were.
func (w WorkingSet) Only(keep func(phase, source string) bool) WorkingSet {
	filter := func(list []MemoryItem) []MemoryItem {
		return slices.DeleteFunc(slices.Clone(list), func(m MemoryItem) bool { return !keep(m.Phase, m.Source) })
	}
	out := WorkingSet{LastID: w.LastID, Summary: filter(w.Summary), Pinned: filter(w.Pinned),
		Decisions: filter(w.Decisions), Open: filter(w.Open), Done: filter(w.Done)}
	out.Files = slices.DeleteFunc(slices.Clone(w.Files), func(f FileTouch) bool { return !keep(f.Phase, "") })
	return out
}

// PhaseSummary is the latest summary of a phase, "" when none.
func (w WorkingSet) PhaseSummary(phase string) string {
	if i := slices.IndexFunc(w.Summary, func(m MemoryItem) bool { return m.Phase == phase }); i >= 0 {
		return w.Summary[i].Text
	}
	return ""
}

// Touch records files a phase changed.
func (w *WorkingSet) Touch(files []string, phase string, at time.Time) {
	for _, f := range files {
		i := slices.IndexFunc(w.Files, func(t FileTouch) bool { return t.Path == f })
		if i >= 0 {
			w.Files = slices.Delete(w.Files, i, i+1)
		}
		w.Files = append(w.Files, FileTouch{Path: f, Phase: phase, At: at})
	}
	if extra := len(w.Files) - maxFilesTouched; extra > 0 {
		w.Files = slices.Delete(w.Files, 0, extra)
	}
}

// MatchTask returns the index of the open task a [DONE] text closes, or
// -1: the same text (case, spaces and punctuation aside), else the task
// whose words the text shares most, when they share at least 60 % of
// their words together (Jaccard over words without "the", "a" and such,
// their endings -ing, -ed, -es, -s and a final -e taken off: "fixed the
// login bugs" closes "Fix login bug", "updated the docs" closes "update
// the doc"; "add tests for the lexer" does not close "add tests for the
// parser"). Among equals the oldest task wins.
func MatchTask(open []MemoryItem, text string) int {
	want := normalText(text)
	if want == "" {
		return -1
	}
	for i, m := range open {
		if normalText(m.Text) == want {
			return i
		}
	}
	wantWords := wordSet(want)
	best, bestScore := -1, 0.0
	for i, m := range open {
		if score := jaccard(wantWords, wordSet(normalText(m.Text))); score > bestScore {
			best, bestScore = i, score
		}
	}
	if bestScore < 0.6 {
		return -1
	}
	return best
}

// NearestTask is the open task that shares the most with text, however
// little (a word), or -1: what a "did you mean" offers when MatchTask
// finds none close enough to close.
func NearestTask(open []MemoryItem, text string) int {
	wantWords := wordSet(normalText(text))
	best, bestScore := -1, 0.0
	for i, m := range open {
		if score := jaccard(wantWords, wordSet(normalText(m.Text))); score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// stopWord tells the words left out of the comparison of a [DONE] with
// the tasks: "the", "a" and friends make unrelated texts look alike.
func stopWord(w string) bool {
	switch w {
	case "a", "an", "the", "of", "to", "and", "in", "on", "for", "done", "is", "it", "with":
		return true
	}
	return false
}

func wordSet(normal string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(normal) {
		if !stopWord(w) {
			set[stem(w)] = true
		}
	}
	return set
}

// irregularPast maps the past tenses a [DONE] line often uses that no
// ending rule brings back to their verb: "wrote the docs" closes "write
// the docs".
var irregularPast = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"wrote": "write", "rewrote": "rewrite", "written": "write", "rewritten": "rewrite",
		"made": "make", "built": "build", "rebuilt": "rebuild", "ran": "run", "did": "do", "done": "do",
		"undid": "undo", "found": "find", "got": "get", "gotten": "get", "took": "take", "taken": "take",
		"kept": "keep", "left": "leave", "began": "begin", "begun": "begin", "chose": "choose",
		"chosen": "choose", "broke": "break", "broken": "break", "caught": "catch", "brought": "bring",
		"thought": "think", "sent": "send", "spent": "spend", "drew": "draw", "drawn": "draw",
		"fed": "feed", "froze": "freeze", "frozen": "freeze", "hid": "hide", "hidden": "hide",
		"held": "hold", "laid": "lay", "led": "lead", "lost": "lose", "meant": "mean", "met": "meet",
		"paid": "pay", "said": "say", "sold": "sell", "shook": "shake", "shown": "show", "slept": "sleep",
		"spoke": "speak", "spoken": "speak", "stood": "stand", "struck": "strike", "taught": "teach",
		"tore": "tear", "torn": "tear", "told": "tell", "threw": "throw", "thrown": "throw",
		"understood": "understand", "woke": "wake", "wore": "wear", "won": "win", "withdrew": "withdraw",
		"went": "go", "gone": "go", "gave": "give", "given": "give", "knew": "know", "known": "know",
		"saw": "see", "seen": "see", "came": "come", "became": "become", "felt": "feel", "heard": "hear",
		"bought": "buy", "fought": "fight", "sought": "seek", "dealt": "deal", "split": "split",
	}
}}

// stem takes the commonest English endings off a word, so that "fixed
// the tests" names "fix the test": a [DONE] is often the task in the
// past tense. A final "e" goes too, so that "update", "updated" and
// "updating" meet, and a plural "s" of a short word ("bugs"), but not
// the end of "ss" ("pass").
func stem(w string) string {
	if base, ok := irregularPast.Get()[w]; ok {
		w = base
	}
	if len(w) <= 3 {
		return w
	}
	for _, end := range []string{"ing", "ed", "es", "s"} {
		if strings.HasSuffix(w, end) && len(w)-len(end) >= 3 && !(end == "s" && strings.HasSuffix(w, "ss")) {
			w = w[:len(w)-len(end)]
			break
		}
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common := 0
	for w := range a {
		if b[w] {
			common++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}

// normalText is text in lower case with punctuation made space and runs
// of space made one.
func normalText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return ' '
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

func containsText(list []MemoryItem, text string) bool {
	want := normalText(text)
	return slices.ContainsFunc(list, func(m MemoryItem) bool { return normalText(m.Text) == want })
}

// keepNewest drops the oldest items beyond maxMemoryItems, except those
// keep says to keep.
func keepNewest(list []MemoryItem, keep func(MemoryItem) bool) []MemoryItem {
	for extra := len(list) - maxMemoryItems; extra > 0; extra-- {
		i := 0
		if keep != nil {
			i = slices.IndexFunc(list, func(m MemoryItem) bool { return !keep(m) })
			if i < 0 {
				return list
			}
		}
		list = slices.Delete(list, i, i+1)
	}
	return list
}

// clipText cuts text to MaxMemoryText bytes at a rune boundary.
func clipText(s string) string {
	if len(s) <= MaxMemoryText {
		return s
	}
	cut := MaxMemoryText - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// MarkerHint ends every agent prompt: the one line that tells the agent
// the markers exist. No marker starts a line of it, so an agent that
// echoes its prompt records nothing.
const MarkerHint = "(Pipeline keeps a working set for you across sessions: a line of your output that starts with " +
	"[DECISION], [FACT], [TODO], [DONE] or [SUMMARY] and then text records a decision, a fact to keep, " +
	"an open task, a task finished (name it), or where the work stands.)"
