package cli

type AuthCmd struct{}
