package cli

type SessionCmd struct{}
