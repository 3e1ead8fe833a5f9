package store

// Scale-out (versions 30–39): owner leases and write fencing for several
// gateways sharing one PostgreSQL database (docs/scale-out.md).
//
// Each gateway holds an owners row whose lease_expires_at (database clock,
// Unix ms) it renews by heartbeat; incarnation is the fencing token
// (BIGSERIAL: only ever increases). On PostgreSQL a statement trigger on
// every state table checks, in the writing transaction itself, that the
// connection's owner (clawkit.owner_incarnation, set on each pooled
// connection of a gateway) still holds a live lease: a gateway that was
// paused past its lease cannot write late, whatever code path tries. A
// table added later needs the same trigger (see ownerFenceTables).
//
// SQLite gets the columns only: one host, and the owner lock file already
// excludes a second owner.
func ownerLeaseMigrations(add func(Migration)) {
	add(Migration{Version: 30, Name: "owner_leases", SQL: `
ALTER TABLE owners ADD COLUMN lease_expires_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE owners ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE owners ADD COLUMN home TEXT NOT NULL DEFAULT '';
`, Postgres: `
ALTER TABLE owners ADD COLUMN lease_expires_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE owners ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE owners ADD COLUMN home TEXT NOT NULL DEFAULT '';
CREATE INDEX owners_live ON owners (lease_expires_at) WHERE stopped_at IS NULL;
CREATE FUNCTION clawkit_owner_fence() RETURNS trigger LANGUAGE plpgsql AS $fence$
DECLARE
  inc text := current_setting('clawkit.owner_incarnation', true);
BEGIN
  IF inc IS NULL OR inc = '' THEN
    RETURN NULL;
  END IF;
  PERFORM 1 FROM owners
    WHERE incarnation = inc::bigint AND stopped_at IS NULL
      AND lease_expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'owner lease % is no longer held: this gateway was fenced off', inc
      USING ERRCODE = 'CK001';
  END IF;
  RETURN NULL;
END
$fence$;
` + ownerFenceTriggers("sessions", "research_jobs", "skill_index", "skill_events")})

	// Which owner created a research job: recovery on a shared database
	// only gives up on a submitting job (indeterminate) once its creator's
	// lease is gone, never while another live gateway is creating it. On
	// PostgreSQL a trigger fills it from the connection's lease, so no
	// insert has to know about it; 0 is "no lease" (SQLite, offline).
	add(Migration{Version: 31, Name: "research_job_owner", SQL: `
ALTER TABLE research_jobs ADD COLUMN owner_incarnation BIGINT NOT NULL DEFAULT 0;
`, Postgres: `
ALTER TABLE research_jobs ADD COLUMN owner_incarnation BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION clawkit_job_owner() RETURNS trigger LANGUAGE plpgsql AS $owner$
BEGIN
  NEW.owner_incarnation := coalesce(nullif(current_setting('clawkit.owner_incarnation', true), ''), '0')::bigint;
  RETURN NEW;
END
$owner$;
CREATE TRIGGER research_jobs_owner BEFORE INSERT ON research_jobs FOR EACH ROW EXECUTE FUNCTION clawkit_job_owner();
`})
}

// ownerFenceTriggers returns the DDL that fences writes to tables.
func ownerFenceTriggers(tables ...string) string {
	s := ""
	for _, t := range tables {
		s += "CREATE TRIGGER " + t + "_owner_fence BEFORE INSERT OR UPDATE OR DELETE ON " + t +
			" FOR EACH STATEMENT EXECUTE FUNCTION clawkit_owner_fence();\n"
	}
	return s
}

func researchCancelMigrations(add func(Migration)) {
	// When the provider was last asked to cancel a research job. A
	// cancellation is its own queued job on PostgreSQL; a foreground
	// `research cancel` asks at once and records it here, so the queued
	// job (its backstop, should that request fail or the process die)
	// does not ask again.
	add(Migration{Version: 32, Name: "research_cancel_sent", SQL: `
ALTER TABLE research_jobs ADD COLUMN cancel_sent_at BIGINT NOT NULL DEFAULT 0;
`})
}

func researchHotPollMigrations(add func(Migration)) {
	// On PostgreSQL river schedules polls, so no query looks research jobs
	// up by next_poll_at, yet every poll changes it: indexed, it made each
	// poll's update write a new entry into every index of the table (no
	// HOT update) and leave as many dead ones. Indexed by state alone (it
	// changes only when a job moves on), with room left in each page, a
	// poll's update stays on its page and touches no index. SQLite keeps
	// the index its in-process poller orders due jobs by.
	add(Migration{Version: 33, Name: "research_jobs_hot_polls", Postgres: `
DROP INDEX research_jobs_due;
CREATE INDEX research_jobs_state ON research_jobs (state);
ALTER TABLE research_jobs SET (fillfactor = 80);
`})
}
