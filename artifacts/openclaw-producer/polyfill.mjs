// Set methods (union, intersection, …) that OpenClaw's dependencies expect
// from Node 22+, for running OpenClaw's own worker bundle producer under an
// older Node (used only by the comparison test and the benchmark).
const P = Set.prototype;
const def = (name, fn) => {
  if (!P[name]) Object.defineProperty(P, name, { value: fn, writable: true, configurable: true });
};
def("union", function (o) { const r = new Set(this); for (const v of o.keys()) r.add(v); return r; });
def("intersection", function (o) { const r = new Set(); for (const v of this) if (o.has(v)) r.add(v); return r; });
def("difference", function (o) { const r = new Set(); for (const v of this) if (!o.has(v)) r.add(v); return r; });
def("symmetricDifference", function (o) {
  const r = new Set(this);
  for (const v of o.keys()) { if (this.has(v)) r.delete(v); else r.add(v); }
  return r;
});
def("isSubsetOf", function (o) { for (const v of this) if (!o.has(v)) return false; return true; });
def("isSupersetOf", function (o) { for (const v of o.keys()) if (!this.has(v)) return false; return true; });
def("isDisjointFrom", function (o) { for (const v of this) if (o.has(v)) return false; return true; });
