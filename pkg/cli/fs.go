package cli

type FSCmd struct{}
