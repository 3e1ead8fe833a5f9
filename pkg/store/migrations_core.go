package store

// Version ranges: 1–9 core, 10–19 research, 20–29 skills.
func coreMigrations(add func(Migration)) {
	add(Migration{Version: 1, Name: "core", SQL: `
CREATE TABLE meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  schema_version INTEGER NOT NULL
);
CREATE TABLE owners (
  incarnation INTEGER PRIMARY KEY AUTOINCREMENT,
  owner_id    TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  version     TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  stopped_at  TEXT
);
CREATE TABLE sessions (
  agent_id    TEXT NOT NULL,
  session_key TEXT NOT NULL,
  incarnation INTEGER NOT NULL DEFAULT 1,
  status      TEXT NOT NULL CHECK (status IN ('active','refreshing','revoked')),
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (agent_id, session_key)
);
`, Postgres: `
CREATE TABLE meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  schema_version INTEGER NOT NULL
);
CREATE TABLE owners (
  incarnation BIGSERIAL PRIMARY KEY,
  owner_id    TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  version     TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  stopped_at  TEXT
);
CREATE TABLE sessions (
  agent_id    TEXT NOT NULL,
  session_key TEXT NOT NULL,
  incarnation BIGINT NOT NULL DEFAULT 1,
  status      TEXT NOT NULL CHECK (status IN ('active','refreshing','revoked')),
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (agent_id, session_key)
);
`})
	add(Migration{Version: 2, Name: "session_retry_after", SQL: `
ALTER TABLE sessions ADD COLUMN retry_after_ms BIGINT NOT NULL DEFAULT 0;
`})
}
