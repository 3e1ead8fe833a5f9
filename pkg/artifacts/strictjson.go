package artifacts

import "github.com/clawkit/clawkit/pkg/strictjson"

// maxContractDepth bounds the nesting of a manifest, receipt or install
// record: their shapes are a few levels deep.
const maxContractDepth = 64

// CheckStrictJSON refuses what encoding/json would accept silently in a
// contract document (manifest, receipt, install record): invalid UTF-8,
// duplicate object keys at any depth, nesting past maxContractDepth and
// data after the document. It does not check the document's shape.
func CheckStrictJSON(raw []byte) error { return strictjson.Check(raw, maxContractDepth) }
