// Package mockapi serves small mocks of the agent vendors' APIs on
// 127.0.0.1 for the adapters' tests: each logs every request and fails,
// streams, or reports usage on demand.
package mockapi
