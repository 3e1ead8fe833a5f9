package cli

type ConfigCmd struct{}
