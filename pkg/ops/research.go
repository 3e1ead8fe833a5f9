package ops

import "github.com/clawkit/clawkit/pkg/research"

// research.* operations and the gateway's research recovery + poller.
func init() { domains = append(domains, research.Register) }
