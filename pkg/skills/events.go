package skills

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// The skill_changed event log: what each commit recorded and whether its
// hooks were delivered.

func opEvents(ctx context.Context, env *owner.OpEnv, p EventsParams) ([]EventRecord, error) {
	// p is as checkEvents returned it (the skill name, when given, is
	// checked).
	if p.AgentID == "" {
		p.AgentID = store.DefaultAgent
	}
	if p.Limit <= 0 || p.Limit > 10000 {
		p.Limit = 100
	}
	q := `SELECT event_id, action, file, event_json, dispatch, hooks_json, created_at FROM skill_events WHERE agent_id = ?`
	args := []any{p.AgentID}
	if p.PluginID != "" {
		q += ` AND plugin_id = ?`
		args = append(args, p.PluginID)
	}
	if p.Skill != "" {
		q += ` AND skill = ?`
		args = append(args, p.Skill)
	}
	// The newest N, printed oldest first.
	q = `SELECT * FROM (` + q + ` ORDER BY created_at DESC, event_id DESC LIMIT ?) AS recent ORDER BY created_at, event_id`
	args = append(args, p.Limit)
	rows, err := env.Store.DB().QueryContext(ctx, env.Store.Rebind(q), args...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return []EventRecord{}, nil // a read-only call on a home without a database
		}
		return nil, errs.Failed(errs.CodeStoreError, "cannot read skill events: %v", err)
	}
	defer fsx.CloseRead(rows)
	out := []EventRecord{}
	for rows.Next() {
		var r EventRecord
		var ev, hooks string
		if err := rows.Scan(&r.EventID, &r.Action, &r.File, &ev, &r.Dispatch, &hooks, &r.CreatedAt); err != nil {
			return nil, errs.Failed(errs.CodeStoreError, "cannot read skill events: %v", err)
		}
		_ = json.Unmarshal([]byte(ev), &r.Event)
		_ = json.Unmarshal([]byte(hooks), &r.Hooks)
		if r.Hooks == nil {
			r.Hooks = []HookResult{}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// stamp is a fixed-width UTC time, so text order is time order.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func newEventID(t time.Time) string {
	return fmt.Sprintf("se_%s_%s", t.UTC().Format("20060102T150405.000000000"), randHex(4))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
