package cli

import (
	"fmt"

	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// SessionCmd is `clawkit session …`.
type SessionCmd struct {
	Create     SessionActionCmd `cmd:"" help:"Create a session (active, incarnation 1)."`
	List       SessionListCmd   `cmd:"" help:"List sessions."`
	Show       SessionActionCmd `cmd:"" help:"Show one session."`
	Reset      SessionActionCmd `cmd:"" help:"Start a session over: bump its incarnation and reactivate it."`
	Revoke     SessionActionCmd `cmd:"" help:"Revoke a session permanently."`
	Refreshing SessionActionCmd `cmd:"" help:"Mark a session as refreshing its authority (commands get exit 5 meanwhile)."`
	Activate   SessionActionCmd `cmd:"" help:"End a refresh: mark the session active again."`
}

// SessionActionCmd is a leaf naming one session.
type SessionActionCmd struct {
	Key          string `arg:"" help:"Session key."`
	Agent        string `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	RetryAfterMs int64  `help:"For refreshing: the retry hint (ms) refused commands report." default:"1000"`
}

// sessionVerbs are the operations of SessionActionCmd's verbs.
var sessionVerbs = map[string]owner.Handle[core.SessionParams, store.Session]{
	"create": core.OpSessionCreate, "show": core.OpSessionShow, "reset": core.OpSessionReset,
	"revoke": core.OpSessionRevoke, "refreshing": core.OpSessionRefreshing, "activate": core.OpSessionActivate,
}

// Run performs the verb the user chose (create, show, reset, ...).
func (c *SessionActionCmd) Run(env *Env) error {
	ctx, kctx := env.Ctx, env.Kong
	verb := kctx.Selected().Name
	p := core.SessionParams{AgentID: c.Agent, SessionKey: c.Key}
	if verb == "refreshing" {
		p.RetryAfterMs = c.RetryAfterMs
	}
	s, err := sessionVerbs[verb].Call(ctx, env, p)
	if err != nil {
		return err
	}
	return printSession(env, s)
}

// SessionListCmd lists sessions.
type SessionListCmd struct {
	Agent string `help:"Only this agent's sessions."`
}

// Run runs `clawkit session list`.
func (c *SessionListCmd) Run(env *Env) error {
	ctx := env.Ctx
	out, err := core.OpSessionList.Call(ctx, env, core.SessionParams{AgentID: c.Agent})
	if err != nil {
		return err
	}
	if out == nil {
		out = []store.Session{}
	}
	return env.Out.Result(out, func(w *Printer) {
		tw := w.Table(0, 4, 2)
		fmt.Fprintln(tw, "AGENT\tSESSION\tINCARNATION\tSTATUS")
		for _, s := range out {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", s.AgentID, s.SessionKey, s.Incarnation, s.Status)
		}
		tw.Flush()
	})
}

func printSession(env *Env, s store.Session) error {
	return env.Out.Result(s, func(w *Printer) {
		fmt.Fprintf(w, "agent:       %s\nsession:     %s\nincarnation: %d\nstatus:      %s\n", s.AgentID, s.SessionKey, s.Incarnation, s.Status)
	})
}
