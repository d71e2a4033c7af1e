package search

// An FTS5 auxiliary function of ours, matchStats, gives the ranking
// (rank.go) what it needs of a match: how often each of the query's
// phrases is in the document, the document's length, and the index's
// row count and total length. FTS5's own bm25() has these too, but first
// counts the documents each phrase matches in the whole index; ours
// leaves that count to the ranking, which estimates it from the phrase's
// most recent matches.
//
// modernc.org/sqlite is SQLite translated to Go: an auxiliary function is
// a Go function with the C signature, registered through the fts5_api
// that FTS5 hands out to "SELECT fts5(?1)" on each connection, which an
// auto-extension (run by SQLite on every connection it opens) reads.

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// statsFunction is matchStats's name in SQL: statsFunction(text) is a
// blob of little-endian int64s (see matchStats).
const statsFunction = "pipeline_match_stats"

// registerMatchStats makes every SQLite connection opened after it have
// statsFunction; Open calls it before it opens the index.
var registerMatchStats = sync.OnceValue(func() int32 {
	tls := libc.NewTLS()
	defer tls.Close()
	return sqlite3.Xsqlite3_auto_extension(tls, cFunc(addMatchStats))
})

// addMatchStats is the auto-extension: it adds statsFunction to the
// connection db. A connection without FTS5 is left as it is (a query
// with statsFunction then fails, and says so).
func addMatchStats(tls *libc.TLS, db, _, _ uintptr) int32 {
	api := fts5API(tls, db)
	if api == 0 {
		return sqlite3.SQLITE_OK
	}
	name, err := libc.CString(statsFunction)
	if err != nil {
		return sqlite3.SQLITE_NOMEM
	}
	defer libc.Xfree(tls, name)
	create := *(*func(*libc.TLS, uintptr, uintptr, uintptr, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{at[sqlite3.Tfts5_api](api).FxCreateFunction}))
	return create(tls, api, name, 0, cFunc(matchStats), 0)
}

// fts5API is the connection's fts5_api, or 0 without FTS5.
func fts5API(tls *libc.TLS, db uintptr) uintptr {
	bp := tls.Alloc(16) // the statement, then the fts5_api pointer
	defer tls.Free(16)
	query, err := libc.CString("SELECT fts5(?1)")
	if err != nil {
		return 0
	}
	defer libc.Xfree(tls, query)
	pointerType, err := libc.CString("fts5_api_ptr")
	if err != nil {
		return 0
	}
	defer libc.Xfree(tls, pointerType)
	*at[uintptr](bp + 8) = 0
	// The statement reads the schema: like every query of the index, it
	// waits for a search that is writing it. A connection is opened
	// without a busy handler, and left so for its own settings.
	sqlite3.Xsqlite3_busy_timeout(tls, db, busyTimeoutMS)
	defer sqlite3.Xsqlite3_busy_timeout(tls, db, 0)
	if sqlite3.Xsqlite3_prepare_v2(tls, db, query, -1, bp, 0) != sqlite3.SQLITE_OK {
		return 0
	}
	stmt := *at[uintptr](bp)
	defer sqlite3.Xsqlite3_finalize(tls, stmt)
	if sqlite3.Xsqlite3_bind_pointer(tls, stmt, 1, bp+8, pointerType, 0) != sqlite3.SQLITE_OK {
		return 0
	}
	sqlite3.Xsqlite3_step(tls, stmt)
	return *at[uintptr](bp + 8)
}

// Where matchStats's blob has what: then one count per phrase.
const (
	statRows = iota
	statTokens
	statDocTokens
	statPhrases
)

// matchStats is statsFunction: for the current match, the index's rows
// and tokens (FTS5 keeps them in one record), the document's tokens, and
// each phrase's instances in it.
func matchStats(tls *libc.TLS, pAPI, pFts, pCtx uintptr, _ int32, _ uintptr) {
	api := at[sqlite3.Fts5ExtensionApi](pAPI)
	bp := tls.Alloc(16)
	defer tls.Free(16)
	phrases := int(fn1[int32](api.FxPhraseCount)(tls, pFts))
	out := make([]int64, statPhrases+phrases)
	rc := fn2[uintptr](api.FxRowCount)(tls, pFts, bp)
	out[statRows] = *at[int64](bp)
	if rc == sqlite3.SQLITE_OK {
		rc = fn3(api.FxColumnTotalSize)(tls, pFts, -1, bp)
		out[statTokens] = *at[int64](bp)
	}
	if rc == sqlite3.SQLITE_OK {
		*at[int32](bp) = 0
		rc = fn3(api.FxColumnSize)(tls, pFts, -1, bp)
		out[statDocTokens] = int64(*at[int32](bp))
	}
	if rc == sqlite3.SQLITE_OK {
		rc = fn2[uintptr](api.FxInstCount)(tls, pFts, bp)
	}
	instances := *at[int32](bp)
	inst := *(*func(*libc.TLS, uintptr, int32, uintptr, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{api.FxInst}))
	for i := int32(0); rc == sqlite3.SQLITE_OK && i < instances; i++ {
		rc = inst(tls, pFts, i, bp, bp+4, bp+8)
		if phrase := int(*at[int32](bp)); rc == sqlite3.SQLITE_OK && phrase >= 0 && phrase < phrases {
			out[statPhrases+phrase]++
		}
	}
	if rc != sqlite3.SQLITE_OK {
		sqlite3.Xsqlite3_result_error_code(tls, pCtx, rc)
		return
	}
	// In C memory: SQLite copies it (SQLITE_TRANSIENT) before this
	// returns; the race detector's pointer checks refuse Go memory there.
	size := 8 * len(out)
	blob := tls.Alloc(size)
	defer tls.Free(size)
	mem := unsafe.Slice(at[byte](blob), size)
	for i, v := range out {
		binary.LittleEndian.PutUint64(mem[8*i:], uint64(v))
	}
	sqlite3.Xsqlite3_result_blob(tls, pCtx, blob, int32(size), ^uintptr(0))
}

// appendMatchStats decodes a statsFunction blob: its phrases' counts are
// appended to counts.
func appendMatchStats(counts []int64, blob []byte) (rows, tokens, docTokens int64, _ []int64) {
	if len(blob) < 8*statPhrases {
		return 0, 0, 0, counts
	}
	get := func(i int) int64 { return int64(binary.LittleEndian.Uint64(blob[8*i:])) }
	for i := statPhrases; i < len(blob)/8; i++ {
		counts = append(counts, get(i))
	}
	return get(statRows), get(statTokens), get(statDocTokens), counts
}

// cFunc is a Go function as the C function pointer the translated SQLite
// calls (as modernc.org/sqlite passes its own callbacks): f must be a
// function declared at the package's level, not a closure.
func cFunc[T any](f T) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f}))
}

// at is the C memory at p as a T.
func at[T any](p uintptr) *T {
	return (*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p)))
}

// fn1, fn2 and fn3 are C function pointers of the Fts5ExtensionApi as Go
// functions of their signatures: (ctx), (ctx, out) and (ctx, column, out).
func fn1[R any](p uintptr) func(*libc.TLS, uintptr) R {
	return *(*func(*libc.TLS, uintptr) R)(unsafe.Pointer(&struct{ uintptr }{p}))
}

func fn2[A any](p uintptr) func(*libc.TLS, uintptr, A) int32 {
	return *(*func(*libc.TLS, uintptr, A) int32)(unsafe.Pointer(&struct{ uintptr }{p}))
}

func fn3(p uintptr) func(*libc.TLS, uintptr, int32, uintptr) int32 {
	return *(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{p}))
}
