//go:build !xmllint

package main

// xmllintRequired: see xmllint_required_test.go.
const xmllintRequired = false
