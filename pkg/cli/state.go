package cli

type StateCmd struct{}
