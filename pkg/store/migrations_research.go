package store

// Research jobs (versions 10–19). Times are Unix milliseconds (BIGINT: they
// do not fit PostgreSQL's 32-bit INTEGER) so due-job
// queries compare integers on every engine. The binding columns are the
// custody record: a job is only polled or cancelled under the same agent,
// session incarnation, profile, credential account and endpoint.
func researchMigrations(add func(Migration)) {
	add(Migration{Version: 10, Name: "research_jobs", SQL: `
CREATE TABLE research_jobs (
  job_id              TEXT PRIMARY KEY,
  agent_id            TEXT NOT NULL,
  session_key         TEXT NOT NULL,
  session_incarnation BIGINT NOT NULL,
  profile_id          TEXT NOT NULL,
  credential_account  TEXT NOT NULL,
  base_url            TEXT NOT NULL,
  agent               TEXT NOT NULL,
  handle              TEXT UNIQUE,
  state               TEXT NOT NULL,
  provider_status     TEXT NOT NULL DEFAULT '',
  provider_updated    TEXT NOT NULL DEFAULT '',
  question            TEXT NOT NULL,
  output_format       TEXT NOT NULL,
  max_report_bytes    BIGINT NOT NULL,
  idempotency_key     TEXT,
  created_at          BIGINT NOT NULL,
  updated_at          BIGINT NOT NULL,
  submitted_at        BIGINT NOT NULL DEFAULT 0,
  finished_at         BIGINT NOT NULL DEFAULT 0,
  deadline_at         BIGINT NOT NULL,
  next_poll_at        BIGINT NOT NULL DEFAULT 0,
  poll_count          BIGINT NOT NULL DEFAULT 0,
  error_code          TEXT NOT NULL DEFAULT '',
  error_message       TEXT NOT NULL DEFAULT '',
  partial             BIGINT NOT NULL DEFAULT 0,
  published           BIGINT NOT NULL DEFAULT 0,
  report_bytes        BIGINT NOT NULL DEFAULT 0,
  citation_count      BIGINT NOT NULL DEFAULT 0,
  dropped_citations   BIGINT NOT NULL DEFAULT 0,
  cancel_requested_at BIGINT NOT NULL DEFAULT 0,
  row_version         BIGINT NOT NULL DEFAULT 1,
  UNIQUE (agent_id, session_key, idempotency_key)
);
CREATE INDEX research_jobs_due ON research_jobs (state, next_poll_at);
`})
}

func researchChainMigrations(add func(Migration)) {
	// A research job's chain and options (docs/research.md, "Plan review",
	// "Follow-ups"): the plan interaction a confirming turn follows, the
	// parent job a follow-up continues, and the start's options as JSON
	// (inputs' name, size and SHA-256, tools with header profile names:
	// never bytes or secrets).
	//
	// On PostgreSQL, a job that goes back to submitting (a plan's
	// confirming turn, sent by whichever gateway runs the approve) takes
	// that gateway's lease as its owner, as an insert does (migration 31):
	// recovery gives up on a submitting job only once the owner creating
	// it is gone, and the gateway that created the plan may be long gone.
	add(Migration{Version: 34, Name: "research_chain", SQL: researchChainColumns, Postgres: researchChainColumns + `
CREATE TRIGGER research_jobs_owner_resubmit BEFORE UPDATE ON research_jobs FOR EACH ROW
  WHEN (NEW.state = 'submitting' AND OLD.state <> 'submitting') EXECUTE FUNCTION clawkit_job_owner();
`})
	// usage: the provider's token use per interaction of the job (JSON,
	// docs/research.md "Tokens and cost"); the token budget is a start
	// option (options).
	add(Migration{Version: 35, Name: "research_usage", SQL: `
ALTER TABLE research_jobs ADD COLUMN usage TEXT NOT NULL DEFAULT '';
`})
}

const researchChainColumns = `
ALTER TABLE research_jobs ADD COLUMN plan_handle TEXT NOT NULL DEFAULT '';
ALTER TABLE research_jobs ADD COLUMN parent_job TEXT NOT NULL DEFAULT '';
ALTER TABLE research_jobs ADD COLUMN options TEXT NOT NULL DEFAULT '';
ALTER TABLE research_jobs ADD COLUMN plan_proposed_at BIGINT NOT NULL DEFAULT 0;
`
