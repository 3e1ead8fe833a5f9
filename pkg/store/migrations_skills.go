package store

// Skill authoring (versions 20–29).
//
// skill_index is the discovery index: one row per skill folder that exists,
// refreshed by every commit (write/remove) with the skill's revision.
// skill_events records every skill_changed event, before its hooks run, and
// then the outcome of each hook; event_json is exactly what hooks received
// on stdin. created_at is fixed-width UTC (see pkg/skills), so text order
// is time order on every engine.
func skillsMigrations(add func(Migration)) {
	add(Migration{Version: 20, Name: "skills", SQL: `
CREATE TABLE skill_index (
  plugin_id      TEXT NOT NULL,
  agent_id       TEXT NOT NULL,
  skill          TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  tree_sha256    TEXT NOT NULL,
  files          INTEGER NOT NULL,
  bytes          INTEGER NOT NULL,
  updated_at     TEXT NOT NULL,
  PRIMARY KEY (plugin_id, agent_id, skill)
);
CREATE TABLE skill_events (
  event_id    TEXT PRIMARY KEY,
  plugin_id   TEXT NOT NULL,
  agent_id    TEXT NOT NULL,
  skill       TEXT NOT NULL,
  action      TEXT NOT NULL CHECK (action IN ('write','remove')),
  file        TEXT NOT NULL,
  event_json  TEXT NOT NULL,
  dispatch    TEXT NOT NULL CHECK (dispatch IN ('pending','delivered','failed','no-hooks','undelivered')),
  hooks_json  TEXT NOT NULL DEFAULT '[]',
  created_at  TEXT NOT NULL
);
CREATE INDEX skill_events_by_skill ON skill_events (plugin_id, agent_id, skill, created_at);
`})
}
