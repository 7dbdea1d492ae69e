// Package ident makes the ids of Relay's records: a prefix naming the kind of
// record (`agent_`, `run_`, …) and 21 URL-safe characters.
package ident

import (
	"crypto/rand"
	"time"
)

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

// sorted holds the same 64 symbols as alphabet in byte order, so that ids
// written with it sort as the numbers they encode.
const sorted = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// timeChars is how many of an ordered id's 21 characters encode its time:
// 8 base-64 digits, 48 bits of milliseconds since 1970 (until the year
// 10889).
const timeChars = 8

// Ordered returns prefix followed by 21 characters of [A-Za-z0-9_-]: the
// time in milliseconds, then 13 random characters (78 bits). Ids made later
// sort after those made earlier (in byte order, as databases compare text),
// so that the records a busy server adds land next to each other in the
// database's indexes rather than all over them: a write touches the few
// pages at their end instead of one page per record. They are for records
// written on every run (runs, messages, conversations); an id that must not
// reveal when it was made stays New.
func Ordered(prefix string) string {
	return ordered(prefix, time.Now())
}

func ordered(prefix string, t time.Time) string {
	b := make([]byte, 21)
	_, _ = rand.Read(b[timeChars:])
	for i := timeChars; i < len(b); i++ {
		b[i] = sorted[b[i]&63]
	}
	ms := uint64(t.UnixMilli())
	for i := timeChars - 1; i >= 0; i-- {
		b[i] = sorted[ms&63]
		ms >>= 6
	}
	return prefix + string(b)
}
