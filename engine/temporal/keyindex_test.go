//go:build temporal

package temporal_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

const keyYAML = "version: 1\nphases:\n  - name: build\n    steps: [{name: one, run: \"true\"}]\n"

// A client takes the namespace to have the PipelineKey search attribute
// without asking: on a namespace that has it, a session starts with its
// key in it and the list of open sessions of that key finds it; on one
// that lacks it, the server's refusals are taken (the session starts
// without the attribute, the list asks for every open session) and the
// session is found by its memo all the same. No worker: the sessions
// only have to be open.
func TestLiveFindsTheSessionWithAndWithoutTheKeyAttribute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  bool // the session carries the attribute
	}{
		{"with", []string{"--search-attribute", temporal.KeyAttribute + "=Keyword"}, true},
		{"without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := temporaltest.StartDevServer(t, tc.flags...)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
			defer cancel()
			c, err := temporal.NewClient(ctx, temporal.Target{Address: s.HostPort(), TaskQueue: "q-key"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			src := sourceIn(t, keyYAML)
			key := temporal.Key(src.File, src.Spec)
			other := temporal.Key(src.File, "/elsewhere/spec.md")
			for id, k := range map[string]string{"s-mine": key, "s-other": other} {
				if err := c.Start(ctx, temporal.SessionInput{SessionID: id, Plan: src}, temporal.Memo{File: src.File, Key: k}); err != nil {
					t.Fatalf("start %s: %v", id, err)
				}
			}
			awaitLive(t, ctx, c, key, "s-mine")
			desc, err := s.Client(t).DescribeWorkflow(ctx, "s-mine", "")
			if err != nil {
				t.Fatal(err)
			}
			_, has := desc.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[temporal.KeyAttribute]
			if has != tc.want {
				t.Errorf("the session carries %s: %v, want %v", temporal.KeyAttribute, has, tc.want)
			}
		})
	}
}

// awaitLive waits until the open sessions of key, as the server's
// eventually consistent list has them, are exactly want.
func awaitLive(t *testing.T, ctx context.Context, c *temporal.Client, key string, want ...string) {
	t.Helper()
	var ids []string
	for {
		live, err := c.Live(ctx, key)
		if err != nil {
			t.Fatalf("the open sessions of the key: %v", err)
		}
		ids = ids[:0]
		for _, s := range live {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		if slices.Equal(ids, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the open sessions of the key: %v, want %v", ids, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
