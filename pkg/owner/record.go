package owner

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// Record is <home>/gateway.json, written by a gateway after it holds the
// lock and listens, removed on clean shutdown.
type Record struct {
	OwnerID   string    `json:"ownerId"`
	PID       int       `json:"pid"`
	StartTime int64     `json:"startTime"` // process start, clock ticks since boot (guards pid reuse)
	Socket    string    `json:"socket"`
	Version   string    `json:"version"`
	Engine    string    `json:"engine"`
	StartedAt time.Time `json:"startedAt"`
}

// MaxRecordBytes bounds gateway.json as read: a gateway writes a few
// hundred bytes.
const MaxRecordBytes = 64 << 10

// ReadRecord reads the owner record; (nil, nil) when there is none. A record
// that does not parse is treated as absent (it is stale by definition: a
// live gateway writes it atomically). It is read as a regular file only,
// never through a link, without blocking and at most MaxRecordBytes: a
// FIFO, a device (/dev/zero) or a huge file in its place is an error,
// which every caller takes as "no gateway" (README, "The home").
func ReadRecord(h Home) (*Record, error) {
	b, err := fsx.ReadRegular(h.Record(), MaxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.OwnerID == "" || r.Socket == "" {
		return nil, nil
	}
	return &r, nil
}

// WriteRecord publishes the record atomically with mode 0600.
func WriteRecord(h Home, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(h.Record(), append(b, '\n'), 0o600)
}

// RemoveRecord deletes the record if it still names ownerID.
func RemoveRecord(h Home, ownerID string) {
	if r, _ := ReadRecord(h); r != nil && r.OwnerID != ownerID {
		return
	}
	os.Remove(h.Record())
}

// Alive reports whether the record's process still exists and is the same
// process (its start time matches), so a recycled pid is not mistaken for
// the gateway.
func (r *Record) Alive() bool {
	if !PIDAlive(r.PID) {
		return false
	}
	if r.StartTime == 0 {
		return true
	}
	st, err := ProcessStartTime(r.PID)
	return err != nil || st == r.StartTime
}
