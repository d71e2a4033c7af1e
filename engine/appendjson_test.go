package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/triggers"
)

// The types written by hand, each with AppendJSON: the events every run
// records and the snapshot's state.
// jsonAppender is a type that writes its JSON by hand (appendjson.go);
// EncodeEvent knows the events among them by their types.
type jsonAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

var appendedTypes = []jsonAppender{Started{}, StepFinished{}, Completed{}, Checkpointed{}, State{}}

// Every type written by hand gives encoding/json's bytes: for its zero
// value, for values with every field set (a field added to the type and
// not to its AppendJSON fails here), and for values with each field set
// or not at random (omitempty and omitzero as encoding/json decides them),
// with strings that must be escaped, floats written with exponents and
// times in other zones.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 8))
	for _, typed := range appendedTypes {
		typ := reflect.TypeOf(typed)
		for i := range 600 {
			v := reflect.New(typ).Elem()
			switch {
			case i == 1:
				fill(rng, v, 1)
			case i > 1:
				fill(rng, v, 0.5)
			}
			want, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Interface().(jsonAppender).AppendJSON([]byte("kept"))
			if err != nil || !bytes.Equal(got, append([]byte("kept"), want...)) {
				t.Fatalf("%s (value %d): AppendJSON gave\n%s, %v\nencoding/json gives\nkept%s", typ.Name(), i, got, err, want)
			}
		}
	}
}

// A value encoding/json refuses (a float that is no number, a year of
// five digits) is refused with its error.
func TestAppendJSONRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, v := range []jsonAppender{
		State{CostUSD: math.NaN()},
		StepFinished{Result: StepResult{CostUSD: math.Inf(1)}},
		Completed{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		_, want := json.Marshal(v)
		if _, err := v.AppendJSON(nil); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%T: AppendJSON refused with %v; encoding/json with %v", v, err, want)
		}
	}
}

// fill sets each field of v (a settable value) with probability p, to
// a random value that is not its zero, through pointers, slices and maps.
func fill(rng *rand.Rand, v reflect.Value, p float64) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		zone := time.FixedZone("", (rng.IntN(48)-24)*1800)
		v.Set(reflect.ValueOf(time.Unix(rng.Int64N(250_000_000_000)-62_000_000_000, rng.Int64N(1e9)).In(zone)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.Float64() < p {
				fill(rng, v.Field(i), p)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(rng, v.Elem(), p)
	case reflect.Slice:
		n := rng.IntN(3) + 1
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(rng, v.Index(i), p)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range rng.IntN(3) + 1 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(rng, k, 1)
			fill(rng, e, p)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(randomString(rng)))
	case reflect.String:
		v.SetString(randomString(rng))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(rng.Int64N(1<<40) - 1<<39 + 1)
	case reflect.Float64:
		v.SetFloat(randomFloat(rng))
	default:
		panic(fmt.Sprintf("fill: no random %s", v.Type()))
	}
}

// randomString is a few pieces, some of which encoding/json escapes.
func randomString(rng *rand.Rand) string {
	pieces := []string{"phase", "a b", "<b>", "&", `"`, `\`, "\n", "\t", "\r", "\b", "\f", "\x01", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x82", "🙂", "/", "'"}
	var b strings.Builder
	for range rng.IntN(5) + 1 {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// randomFloat is a cost, or a float that encoding/json writes with an
// exponent.
func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(4) {
	case 0:
		return rng.Float64() * 1e-7
	case 1:
		return rng.Float64() * 1e25
	case 2:
		return -rng.Float64() * 100
	}
	return float64(rng.IntN(10000)) / 100
}

// A run of one step records Started, StepFinished, Completed and a
// snapshot: written by hand, no encoder is built by reflection. Against
// BenchmarkMarshalRunRecords (encoding/json, its encoders built once).
func BenchmarkAppendJSONRunRecords(b *testing.B) {
	records := runRecords()
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range records {
			if _, err := r.AppendJSON(nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkMarshalRunRecords(b *testing.B) {
	records := runRecords()
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range records {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// runRecords are what a run of one true step records.
func runRecords() []jsonAppender {
	at := time.Date(2026, 11, 27, 21, 40, 0, 123456789, time.UTC)
	result := StepResult{ExitCode: 0, Elapsed: 2 * time.Millisecond}
	state := State{Status: StatusCompleted, TotalTokens: 0, Phases: []PhaseRecord{{Name: "one", Status: StatusCompleted, Attempts: 1,
		ExitCodes: []int{0}, Duration: 3 * time.Millisecond, Started: at, Ended: at}}, PlanDigest: "sha256:0123456789abcdef",
		Steps: map[string]triggers.StepVars{"one": {Ran: true, Elapsed: 2 * time.Millisecond}}}
	return []jsonAppender{Started{At: at, Plan: "sha256:0123456789abcdef"}, StepFinished{At: at, Result: result, Execution: 1}, Completed{At: at}, state}
}

// A run is a new process, which encodes each type once: the figure is
// the first encoding of a run's records in a process of its own (this
// test binary again), by encoding/json (its encoders built by
// reflection) and by hand; reported as first-ns/op.
func BenchmarkFirstEncodingOfRunRecords(b *testing.B) {
	for _, way := range []string{"encoding-json", "by-hand"} {
		b.Run(way, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "PIPELINE_FIRST_ENCODING="+way)
				out, err := cmd.Output()
				if err != nil {
					b.Fatal(err)
				}
				_, text, _ := strings.Cut(string(out), "first encoding: ")
				took, err := time.ParseDuration(strings.Fields(text + " x")[0])
				if err != nil {
					b.Fatalf("the child said %q", out)
				}
				total += took
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "first-ns/op")
		})
	}
}

// TestMain runs the test binary as BenchmarkFirstEncodingOfRunRecords's
// child when the benchmark asks, else the tests.
func TestMain(m *testing.M) {
	if way := os.Getenv("PIPELINE_FIRST_ENCODING"); way != "" {
		firstEncoding(way)
		return
	}
	os.Exit(m.Run())
}

// firstEncoding, alone in its process, encodes a run's records once and
// prints how long that took.
func firstEncoding(way string) {
	records := runRecords()
	start := time.Now()
	for _, r := range records {
		var err error
		if way == "by-hand" {
			_, err = r.AppendJSON(nil)
		} else {
			_, err = json.Marshal(r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("first encoding: %s\n", time.Since(start))
}

// EncodeEvent names every event as its type is named and writes
// encoding/json's bytes, for the events written by hand as for the rest.
func TestEncodeEventNamesAndWritesEveryEvent(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	for name, typ := range eventTypes.Get() {
		for i := range 50 {
			v := reflect.New(typ).Elem()
			if i > 0 {
				fill(rng, v, 0.5)
			}
			ev := v.Interface().(Event)
			want, wantErr := json.Marshal(ev)
			gotName, got, err := EncodeEvent(ev)
			if gotName != name || !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
				t.Fatalf("EncodeEvent of a %s (value %d): %s %s, %v; want %s %s, %v", name, i, gotName, got, err, name, want, wantErr)
			}
		}
	}
}
