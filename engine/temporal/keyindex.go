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
// by their memo as before. A client takes the namespace to have it until
// the server refuses it in a start or a list, and then does without.

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

// keyIndexed tells whether the namespace is taken to have KeyAttribute:
// yes until the server refuses it (keyRefused). Asking first was a round
// trip more for every run, on a server a hundred runs at once keep busy.
func (c *Client) keyIndexed() bool {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	return !c.keyMissing
}

// keyRefused notes that the server refused KeyAttribute: the namespace
// lacks it (or its frontend does not know it yet).
func (c *Client) keyRefused() {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	c.keyMissing = true
}

// keyAttributes are the search attributes a session of key starts with.
func (c *Client) keyAttributes(key string) sdktemporal.SearchAttributes {
	if key == "" || !c.keyIndexed() {
		return sdktemporal.SearchAttributes{}
	}
	return sdktemporal.NewSearchAttributes(keyAttribute.ValueSet(key))
}

// keyQuery narrows a list of sessions to those of key and those that
// carry no key (their memo says which they are).
func (c *Client) keyQuery(key string) string {
	if !c.keyIndexed() {
		return ""
	}
	return fmt.Sprintf(" AND (%s = '%s' OR %s IS NULL)", KeyAttribute, key, KeyAttribute)
}
