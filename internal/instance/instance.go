// Package instance is who this colibri is among several behind one address
// (docs/scaling.md): its name, and the key it authenticates what it hands a
// stateless caller to continue with — an MRTR requestState, an SSE event id,
// a list cursor.
//
// A token names the instance that sealed it and the run of that instance
// (a random boot id), so that another instance, or this one after a restart,
// can tell "not mine" (the caller starts over) from "forged" (refused).
// The key is random per run and never leaves the process: nothing sealed
// survives a restart, which is what a continuation of a call that no
// longer exists should get.
package instance

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// MaxToken bounds the tokens Open reads: what a caller sends back is
// untrusted, and no payload colibri seals comes near it.
const MaxToken = 4096

// The errors of Open. ErrForeign and ErrStale mean the token is another
// instance's or an earlier run's of this one: the caller starts over
// (docs/scaling.md says what each feature answers). ErrExpired is a token
// past its time; ErrForged one this instance did not seal as it reads.
var (
	ErrForeign = errors.New("issued by another instance")
	ErrStale   = errors.New("issued by an earlier run of this instance")
	ErrExpired = errors.New("expired")
	ErrForged  = errors.New("not issued by this instance as it reads")
)

// Sealer seals and opens this instance's tokens. Its methods are safe for
// concurrent use.
type Sealer struct {
	name string
	boot string // base64url of 9 random bytes: 12 characters
	key  [32]byte
}

const sep = "~" // in neither an instance name nor base64url

// New returns the sealer of the instance called name (a name checked by
// serve's --instance: letters, digits, '.', '_' and '-'), with a fresh key.
func New(name string) *Sealer {
	s := &Sealer{name: name}
	var boot [9]byte
	// crypto/rand.Read never fails (it panics rather than return short).
	_, _ = rand.Read(boot[:])
	_, _ = rand.Read(s.key[:])
	s.boot = base64.RawURLEncoding.EncodeToString(boot[:])
	return s
}

// Name is the instance's name.
func (s *Sealer) Name() string { return s.name }

// Seal returns a token carrying payload for kind (what the token is for:
// "mrtr", "event", "cursor"; a token of one kind never opens as another)
// until expires (the zero time: no expiry).
func (s *Sealer) Seal(kind string, payload []byte, expires time.Time) string {
	body := make([]byte, 8, 8+len(payload))
	if !expires.IsZero() {
		binary.BigEndian.PutUint64(body, uint64(expires.UnixMilli()))
	}
	body = append(body, payload...)
	b := base64.RawURLEncoding.EncodeToString(body)
	return s.name + sep + s.boot + sep + b + sep + s.mac(kind, b)
}

// Open returns the payload of a token of kind that this run of this
// instance sealed and that has not expired at now.
func (s *Sealer) Open(kind, token string, now time.Time) ([]byte, error) {
	if len(token) > MaxToken {
		return nil, ErrForged
	}
	parts := strings.Split(token, sep)
	if len(parts) != 4 {
		return nil, ErrForged
	}
	if parts[0] != s.name {
		return nil, ErrForeign
	}
	if parts[1] != s.boot {
		return nil, ErrStale
	}
	if !hmac.Equal([]byte(parts[3]), []byte(s.mac(kind, parts[2]))) {
		return nil, ErrForged
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(body) < 8 {
		return nil, ErrForged
	}
	if ms := binary.BigEndian.Uint64(body); ms != 0 && now.UnixMilli() > int64(ms) {
		return nil, ErrExpired
	}
	return body[8:], nil
}

// Owns reports whether token names this instance (whatever its run or
// MAC): a balancer-facing check, such as which instance a stream was on.
func (s *Sealer) Owns(token string) bool {
	return strings.HasPrefix(token, s.name+sep)
}

func (s *Sealer) mac(kind, body string) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write([]byte(s.boot))
	m.Write([]byte{0})
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}
