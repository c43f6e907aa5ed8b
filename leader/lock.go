package leader

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotObtained: someone else holds the lock.
	ErrNotObtained = errors.New("leader: lock not obtained")
	// ErrLockLost: the lock expired or changed hands since we took it.
	ErrLockLost = errors.New("leader: lock lost")
	// ErrNoLeader: nobody holds the lock right now.
	ErrNoLeader = errors.New("leader: no leader")
)

var (
	//go:embed *.lua
	luaFiles      embed.FS
	lua           = script.NewLib("leader", luaFiles)
	acquireScript = lua.Script("acquire")
	refreshScript = lua.Script("refresh")
	releaseScript = lua.Script("release")
	infoScript    = lua.Script("info")
)

// EpochKey is the fencing counter that belongs to lock key. It shares the
// key's hash tag, so both live in one Redis Cluster slot.
func EpochKey(key string) string { return key + ":epoch" }

// Lock is one holding of a Redis lock. Its Epoch is the fencing token: it
// strictly increases with every successful Obtain of the same key.
type Lock struct {
	c     redis.Scripter
	key   string
	value string
	epoch int64
}

// Obtain takes the lock at key for ttl if nobody holds it, and returns
// ErrNotObtained if somebody does. id names the holder for Leader/Observe.
func Obtain(ctx context.Context, c redis.Scripter, key, id string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("leader: TTL %v is below one millisecond", ttl)
	}
	var raw [16]byte // 128 bits: unguessable, so nobody else can match our value
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("leader: token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	res, err := acquireScript.Run(ctx, c, []string{key, EpochKey(key)}, token, id, ttl.Milliseconds()).Int64()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotObtained
	}
	if err != nil {
		return nil, fmt.Errorf("leader: acquire %s: %w", key, err)
	}
	return &Lock{c: c, key: key, epoch: res, value: fmt.Sprintf("%d:%s:%s", res, token, id)}, nil
}

// Epoch is the fencing token minted when this lock was obtained.
func (l *Lock) Epoch() int64 { return l.epoch }

// Key is the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Refresh extends the lock to ttl from now (server time). It returns
// ErrLockLost when the lock is no longer ours; it never re-acquires.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	n, err := refreshScript.Run(ctx, l.c, []string{l.key}, l.value, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("leader: refresh %s: %w", l.key, err)
	}
	if n != 1 {
		return ErrLockLost
	}
	return nil
}

// Release deletes the lock if it is still ours. A lock that expired and was
// taken by another holder is left alone, and ErrLockLost is returned.
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.c, []string{l.key}, l.value).Int64()
	if err != nil {
		return fmt.Errorf("leader: release %s: %w", l.key, err)
	}
	if n != 1 {
		return ErrLockLost
	}
	return nil
}

// Info describes the current holder of a lock.
type Info struct {
	ID    string        `json:"id"`     // holder id given to Obtain
	Epoch int64         `json:"epoch"`  // the holder's fencing token
	TTL   time.Duration `json:"ttl_ns"` // time left before the lock expires, by the server's clock
}

// Current reports who holds the lock at key, or ErrNoLeader.
// LastEpoch is the newest epoch minted, held or not.
func Current(ctx context.Context, c redis.Scripter, key string) (info Info, lastEpoch int64, err error) {
	res, err := infoScript.Run(ctx, c, []string{key, EpochKey(key)}).Slice()
	if err != nil {
		return Info{}, 0, fmt.Errorf("leader: read %s: %w", key, err)
	}
	if len(res) != 3 {
		return Info{}, 0, fmt.Errorf("leader: read %s: unexpected reply %v", key, res)
	}
	lastEpoch, _ = res[2].(int64)
	value, ok := res[0].(string)
	if !ok {
		return Info{}, lastEpoch, ErrNoLeader
	}
	pttl, _ := res[1].(int64)
	parts := strings.SplitN(value, ":", 3)
	if len(parts) != 3 {
		return Info{}, lastEpoch, fmt.Errorf("leader: %s holds %q, not a lock value", key, value)
	}
	epoch, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return Info{}, lastEpoch, fmt.Errorf("leader: %s holds %q, not a lock value", key, value)
	}
	return Info{ID: parts[2], Epoch: epoch, TTL: time.Duration(pttl) * time.Millisecond}, lastEpoch, nil
}
