// PostgreSQL: the two foreign keys of user_messages (user_id → users,
// message_id → messages) checked once per statement instead of once per row.
// A native key runs its check (a SELECT … FOR KEY SHARE through SPI) for every
// row inserted: a send to a channel of 1,000 subscribers ran 2,000 of them,
// ~9.5 ms of its 14 ms insert (bench/RESULTS.md, "The flag rows' keys checked
// per statement"). The same guarantees, from statement triggers:
// - rows inserted: the users and messages they name are locked FOR KEY SHARE,
//   as a native key's check locks them (a concurrent delete of one waits for
//   the insert's commit, and a delete already made fails it), each by an
//   index look-up in one statement; one missing fails the statement with
//   foreign_key_violation (23503), as before;
// - a key column updated (nothing does today; flags updates do not name the
//   columns, so the trigger does not fire for them): the same, row by row;
// - messages or users deleted (or renumbered: nothing does): fails while a flag
//   row names one (NO ACTION, as before). A delete that waited for an insert's lock sees its rows (READ
//   COMMITTED: the check takes a new snapshot);
// - messages or users truncated with flag rows left: fails.
// SQLite keeps its native keys: they cost it ~5% of a send.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`ALTER TABLE user_messages DROP CONSTRAINT user_messages_user_id_fkey`.execute(db);
  await sql`ALTER TABLE user_messages DROP CONSTRAINT user_messages_message_id_fkey`.execute(db);

  // The names of the constraints they replace, so errors read as before.
  await sql`CREATE FUNCTION user_messages_keys_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  wanted bigint;
  locked bigint;
BEGIN
  -- LATERAL keeps each look-up an index probe, whatever the number of rows.
  SELECT count(*), count(l.id) INTO wanted, locked FROM (SELECT DISTINCT message_id FROM written) AS w
    LEFT JOIN LATERAL (SELECT m.id FROM messages AS m WHERE m.id = w.message_id FOR KEY SHARE) AS l ON true;
  IF locked <> wanted THEN
    RAISE EXCEPTION 'insert or update on table "user_messages" violates foreign key constraint "user_messages_message_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'user_messages', CONSTRAINT = 'user_messages_message_id_fkey';
  END IF;
  SELECT count(*), count(l.id) INTO wanted, locked FROM (SELECT DISTINCT user_id FROM written) AS w
    LEFT JOIN LATERAL (SELECT u.id FROM users AS u WHERE u.id = w.user_id FOR KEY SHARE) AS l ON true;
  IF locked <> wanted THEN
    RAISE EXCEPTION 'insert or update on table "user_messages" violates foreign key constraint "user_messages_user_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'user_messages', CONSTRAINT = 'user_messages_user_id_fkey';
  END IF;
  RETURN NULL;
END
$$`.execute(db);
  await sql`CREATE TRIGGER user_messages_keys_inserted AFTER INSERT ON user_messages
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION user_messages_keys_written()`.execute(db);

  await sql`CREATE FUNCTION user_messages_key_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM messages WHERE id = NEW.message_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insert or update on table "user_messages" violates foreign key constraint "user_messages_message_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'user_messages', CONSTRAINT = 'user_messages_message_id_fkey';
  END IF;
  PERFORM 1 FROM users WHERE id = NEW.user_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insert or update on table "user_messages" violates foreign key constraint "user_messages_user_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'user_messages', CONSTRAINT = 'user_messages_user_id_fkey';
  END IF;
  RETURN NULL;
END
$$`.execute(db);
  await sql`CREATE TRIGGER user_messages_key_updated AFTER UPDATE OF user_id, message_id ON user_messages
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.message_id IS DISTINCT FROM NEW.message_id)
    EXECUTE FUNCTION user_messages_key_updated()`.execute(db);

  // The referenced side: TG_ARGV[0] is the user_messages column naming the deleted (or renumbered) table's rows;
  // each branch an index look-up (the primary key leads with user_id; user_messages_message).
  await sql`CREATE FUNCTION user_messages_referenced_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (TG_ARGV[0] = 'user_id' AND EXISTS (SELECT 1 FROM gone AS g JOIN user_messages AS um ON um.user_id = g.id))
    OR (TG_ARGV[0] = 'message_id' AND EXISTS (SELECT 1 FROM gone AS g JOIN user_messages AS um ON um.message_id = g.id)) THEN
    RAISE EXCEPTION 'update or delete on table "%" violates foreign key constraint "user_messages_%_fkey" on table "user_messages"', TG_TABLE_NAME, TG_ARGV[0]
      USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = 'user_messages_' || TG_ARGV[0] || '_fkey';
  END IF;
  RETURN NULL;
END
$$`.execute(db);
  await sql`CREATE FUNCTION user_messages_referenced_renumbered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (TG_ARGV[0] = 'user_id' AND EXISTS (SELECT 1 FROM user_messages WHERE user_id = OLD.id))
    OR (TG_ARGV[0] = 'message_id' AND EXISTS (SELECT 1 FROM user_messages WHERE message_id = OLD.id)) THEN
    RAISE EXCEPTION 'update or delete on table "%" violates foreign key constraint "user_messages_%_fkey" on table "user_messages"', TG_TABLE_NAME, TG_ARGV[0]
      USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = 'user_messages_' || TG_ARGV[0] || '_fkey';
  END IF;
  RETURN NULL;
END
$$`.execute(db);
  await sql`CREATE FUNCTION user_messages_referenced_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM user_messages) THEN
    RAISE EXCEPTION 'cannot truncate table "%" while user_messages has rows', TG_TABLE_NAME USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$`.execute(db);
  for (const [table, column] of [
    ["messages", "message_id"],
    ["users", "user_id"],
  ] as const) {
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_deleted`)} AFTER DELETE ON ${sql.table(table)}
      REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION user_messages_referenced_gone(${sql.lit(column)})`.execute(db);
    // Nothing renumbers rows; were it done, the old number must not be named any more (a row trigger on the
    // id column only: other updates do not fire it).
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_renumbered`)} AFTER UPDATE OF id ON ${sql.table(table)}
      FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION user_messages_referenced_renumbered(${sql.lit(column)})`.execute(db);
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_truncated`)} AFTER TRUNCATE ON ${sql.table(table)}
      FOR EACH STATEMENT EXECUTE FUNCTION user_messages_referenced_truncated()`.execute(db);
  }
}
