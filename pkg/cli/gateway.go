package cli

type GatewayCmd struct{}
