package session

import (
	"fmt"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/osrand"
)

// NewSessionID makes a session id that sorts by start time:
// YYYYMMDD-HHMMSSmmm-xxxxxx, in UTC, with six random hex digits.
func NewSessionID(now time.Time) string {
	now = now.UTC()
	return fmt.Sprintf("%s%03d-%s", now.Format("20060102-150405"), now.Nanosecond()/1e6, osrand.Hex(3))
}

// idShape is what each character of a session id is: d a digit, - a dash,
// x a lowercase hex digit.
const idShape = "dddddddd-ddddddddd-xxxxxx"

// IDExample is a session id, for messages.
const IDExample = "20261125-093000123-a1b2c3"

// CheckID accepts a session id as NewSessionID makes them, the start of
// one, or the end of one (the six hex digits pipeline watch shows): the id
// a human types is used to find a folder, and anything else (a path, a
// pattern, "..") never reaches the store.
func CheckID(id string) error {
	return checkID(id, false)
}

// CheckRef checks a session named on the command line: its id (or its
// start or end), or its name (run --name).
func CheckRef(ref string) error {
	return checkID(ref, true)
}

func checkID(id string, named bool) error {
	if named && store.CheckName(id) == nil {
		return nil
	}
	if id == "" || len(id) > len(idShape) || !fits(id, idShape[:len(id)]) && !fits(id, idShape[len(idShape)-len(id):]) {
		return refused("%q is not a session id: session ids look like %s (YYYYMMDD-HHMMSSmmm-xxxxxx); give one, its start or its end, or the session's name (pipeline sessions lists them)",
			id, IDExample)
	}
	return nil
}

// fits tells whether each character of id is what shape says it is.
func fits(id, shape string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := false
		switch shape[i] {
		case 'd':
			ok = c >= '0' && c <= '9'
		case 'x':
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		default:
			ok = c == shape[i]
		}
		if !ok {
			return false
		}
	}
	return true
}
