package cli

import (
	"context"

	"github.com/clawkit/clawkit/pkg/ops"
	"github.com/clawkit/clawkit/pkg/owner"
)

// HomeDir resolves the clawkit home from --home/CLAWKIT_HOME/XDG/HOME.
func (e *Env) HomeDir() (owner.Home, error) {
	return owner.ResolveHome(e.Globals.Home, e.Getenv)
}

// Route makes Env an owner.Caller: a stateful operation's handle
// (core.OpSessionShow.Call(ctx, env, p)) runs through the owner router, to a
// live gateway, else in-process under the owner lock.
func (e *Env) Route(ctx context.Context, name string, p any, into owner.Reply) (any, error) {
	h, err := e.HomeDir()
	if err != nil {
		return nil, err
	}
	r := &owner.Router{
		Home:        h,
		Registry:    ops.Registry(),
		LockTimeout: e.Globals.LockTimeout,
		Gateway:     e.Globals.Gateway,
		Now:         e.Now,
		Progress:    e.Out.ProgressWriter(),
		Version:     ReadBuildInfo().Version,
	}
	return r.Route(ctx, name, p, into)
}
