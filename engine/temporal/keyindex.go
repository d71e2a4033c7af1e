package temporal

// A run looks for the open sessions of its (pipeline, spec) before it
// starts one (Live). Listed by workflow type and status alone, that is
// every open session of the namespace, memo and all, for each run: a
// hundred runs at once made a hundred lists of a hundred sessions, the
// costliest thing the dev server did (seconds each, past the client's
// deadline). So the sessions carry the key as a search attribute,
// KeyAttribute, when the namespace has it (pipeline worker registers it),
// and the list asks for that key only, and for the sessions without it
// (started before, or by a client that did not set it), which it checks
// by their memo as before.

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
)

// KeyAttribute is the search attribute that holds a session's (pipeline,
// spec) key (Memo.Key), a Keyword.
const KeyAttribute = "PipelineKey"

var keyAttribute = sdktemporal.NewSearchAttributeKeyKeyword(KeyAttribute)

// RegisterKeyAttribute adds KeyAttribute to the namespace's search
// attributes, unless it has it. A server that does not let this client
// do it says why; the sessions are then listed without it.
func RegisterKeyAttribute(ctx context.Context, c client.Client, namespace string) error {
	if ok, err := hasKeyAttribute(ctx, c, namespace); err != nil || ok {
		return err
	}
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: map[string]enumspb.IndexedValueType{KeyAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("the search attribute %s cannot be added to namespace %s (the sessions are listed without it): %w", KeyAttribute, namespace, err)
	}
	return nil
}

func hasKeyAttribute(ctx context.Context, c client.Client, namespace string) (bool, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return false, err
	}
	_, ok := resp.GetCustomAttributes()[KeyAttribute]
	return ok, nil
}

// keyIndexed tells whether the namespace has KeyAttribute, asked of the
// server once per client; a server that cannot say is taken for no.
func (c *Client) keyIndexed(ctx context.Context) bool {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	if c.keyKnown {
		return c.keyHas
	}
	ok, err := hasKeyAttribute(ctx, c.C, c.Target.Namespace)
	if err != nil {
		return false
	}
	c.keyKnown, c.keyHas = true, ok
	return ok
}

// keyAttributes are the search attributes a session of key starts with.
func (c *Client) keyAttributes(ctx context.Context, key string) sdktemporal.SearchAttributes {
	if key == "" || !c.keyIndexed(ctx) {
		return sdktemporal.SearchAttributes{}
	}
	return sdktemporal.NewSearchAttributes(keyAttribute.ValueSet(key))
}

// keyQuery narrows a list of sessions to those of key and those that
// carry no key (their memo says which they are).
func (c *Client) keyQuery(ctx context.Context, key string) string {
	if !c.keyIndexed(ctx) {
		return ""
	}
	return fmt.Sprintf(" AND (%s = '%s' OR %s IS NULL)", KeyAttribute, key, KeyAttribute)
}
