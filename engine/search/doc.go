// Package search is the full-text index over the past work of a store's
// sessions: the transcripts and prompts of their steps, the human notes
// and phase summaries, and the working sets. pipeline search uses it:
// each search first indexes what is new, then ranks by BM25 the most
// recent matches (a bound: query.go's candidates) and shows the best.
//
// The index is an SQLite database with an FTS5 table, through the
// pure-Go modernc.org/sqlite, at <store>/search/index.db and, on a
// machine of two cores or more, index.1.db beside it
// (PIPELINE_SEARCH_DATABASES sets how many): each holds the files given
// to it whole; they are filled at once and asked at once by a query,
// whose ranking sums what each counts (shardCount, rank.go). Why SQLite
// FTS5:
//
//   - files beside the sessions, and nothing to run;
//   - transactions: indexing commits every 32 MiB of transcripts (of one
//     file or several) in each database and at its end, so a kill in the
//     middle loses nothing already committed (a file's row, documents
//     and full-text index are in one database, committed together), and
//     the next search goes on from there; two searches at once update
//     one after the other (index.writer) instead of corrupting it;
//   - what BM25 needs of each match (its phrases' counts, its length:
//     read by an auxiliary function of ours, rank.go) and highlighting
//     (highlight()) built in;
//   - a contentless full-text table: the index holds no copy of the
//     text (about a third of the transcripts' size); a hit's text is read
//     again from its transcript, at the offset the index keeps, and
//     highlighted by FTS5 in a table in memory;
//   - corruption is detected (the file's header, when no other search
//     has it open: see shard.open; its schema version, the errors SQLite
//     reports), and the database is then moved aside and
//     rebuilt from the sessions, which remain the record (the other's
//     files are whole in it, and kept);
//   - no cgo: go test ./... runs with Go alone, and the static binary
//     stays static.
//
// The index is a cache: deleting the search folder loses nothing; the
// next search builds it again. The store knows nothing of it (sessions,
// clean, export and import go by the sessions folder and index.tsv).
//
// What is indexed, and how it is kept up to date:
//
//   - transcripts (<phase>/<attempt>-<step>.log) and prompt files
//     (.prompt) are append-only: the index keeps, per file, its size, time,
//     inode and how far it was indexed (a byte offset just past a line
//     break, and the number of lines before it). A search indexes the
//     bytes after it; a file that shrank or whose inode changed is
//     indexed again whole; an unfinished last line waits for its end;
//   - lines are grouped into documents of up to 32 lines or 4 KiB (the
//     first line's number, byte offset and length are kept), and the line
//     of the best match in a document is found when a hit is shown;
//   - a JSON line (stream-json) is indexed as its string values, any
//     other line as it is (extract.go);
//   - a session's notes, phase summaries and working set come from its
//     snapshot (state.json), indexed again when its size or time changed;
//   - a session no longer in the store's index (removed by clean) is
//     removed from the search index.
//
// Text is indexed as the sessions keep it, already redacted.
//
// Beside the index, places/ keeps per transcript the turns and tool calls
// of its lines as a search's rendering found them (places.go), so that
// the next searches place their hits without rendering it again.
package search
