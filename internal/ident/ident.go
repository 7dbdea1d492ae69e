// Package ident makes the ids of Relay's records: a prefix naming the kind of
// record (`agent_`, `run_`, …) and 21 URL-safe random characters.
package ident

import "crypto/rand"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

// New returns prefix followed by 21 random characters of [A-Za-z0-9_-].
func New(prefix string) string {
	b := make([]byte, 21)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		// 64 symbols: the low six bits keep the choice uniform.
		b[i] = alphabet[b[i]&63]
	}
	return prefix + string(b)
}
