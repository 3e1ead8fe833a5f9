package ops

import "github.com/clawkit/clawkit/pkg/skills"

func init() { domains = append(domains, skills.Register) }
