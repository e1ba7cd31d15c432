// PostgreSQL: the two foreign keys of user_messages (user_id → users,
// message_id → messages) checked once per statement instead of once per row.
// A native key runs its check (a SELECT … FOR KEY SHARE through SPI) for every
// row inserted: a send to a channel of 1,000 subscribers ran 2,000 of them,
// ~9.5 ms of its 14 ms insert (bench/RESULTS.md, "The flag rows' keys checked
// per statement"). The same guarantees, from triggers:
// - rows inserted: the users and messages they name are locked FOR KEY SHARE,
//   as a native key's check locks them (a concurrent delete of one waits for
//   the insert's commit; an insert after an uncommitted delete waits, then
//   fails), each by an index look-up in one statement; one missing fails the
//   statement with foreign_key_violation (23503) under the old key's name;
// - a key column updated (nothing does today; flags updates do not name the
//   columns, so the trigger does not fire for them): the same, row by row;
// - messages or users deleted, or renumbered (nothing does): fails while a
//   flag row names one (NO ACTION, as before). The check locks the flag rows
//   it finds, so it waits for a concurrent delete of them as a native key
//   does. It reads with the statement's snapshot, which is fresh only under
//   READ COMMITTED (Parley's only level; a native key re-checks with a new
//   one): under another level it refuses rather than miss a flag row
//   committed after the transaction began;
// - messages or users truncated with flag rows left: fails (and TRUNCATE …
//   CASCADE no longer reaches user_messages: name it).
// The functions keep the search_path they were created with (the server's
// schema), whoever calls them. SQLite keeps its native keys: they cost it ~5%
// of a send.
import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  // In the order a send takes them (users read, a message inserted, its flag rows), so a send running
  // during a rolling upgrade waits for the migration instead of deadlocking with it.
  await sql`LOCK TABLE users, messages, user_messages IN ACCESS EXCLUSIVE MODE`.execute(db);
  await sql`ALTER TABLE user_messages DROP CONSTRAINT user_messages_user_id_fkey`.execute(db);
  await sql`ALTER TABLE user_messages DROP CONSTRAINT user_messages_message_id_fkey`.execute(db);

  const fn = async (name: string, body: RawBuilder<unknown>, args = "") => {
    await sql`CREATE FUNCTION ${sql.id(name)}(${sql.raw(args)}) RETURNS ${sql.raw(args ? "void" : "trigger")} LANGUAGE plpgsql AS ${sql.lit(body.compile(db).sql)}`.execute(db);
    await sql`ALTER FUNCTION ${sql.id(name)}(${sql.raw(args.replace(/\w+ (\w+)/g, "$1"))}) SET search_path FROM CURRENT`.execute(db);
  };

  // The errors, worded as PostgreSQL words a native key's.
  await fn(
    "user_messages_key_violation",
    sql`BEGIN
  IF referencing THEN
    RAISE EXCEPTION 'insert or update on table "user_messages" violates foreign key constraint "user_messages_%_fkey"', key_column
      USING ERRCODE = 'foreign_key_violation', TABLE = 'user_messages', CONSTRAINT = 'user_messages_' || key_column || '_fkey';
  END IF;
  RAISE EXCEPTION 'update or delete on table "%" violates foreign key constraint "user_messages_%_fkey" on table "user_messages"', referenced_table, key_column
    USING ERRCODE = 'foreign_key_violation', TABLE = referenced_table, CONSTRAINT = 'user_messages_' || key_column || '_fkey';
END`,
    "referencing boolean, referenced_table text, key_column text",
  );

  // LATERAL … FOR KEY SHARE cannot be flattened: each distinct ID is an index probe, however many rows.
  await fn(
    "user_messages_keys_written",
    sql`DECLARE
  wanted bigint;
  locked bigint;
BEGIN
  SELECT count(*), count(l.id) INTO wanted, locked FROM (SELECT DISTINCT message_id FROM written) AS w
    LEFT JOIN LATERAL (SELECT m.id FROM messages AS m WHERE m.id = w.message_id FOR KEY SHARE) AS l ON true;
  IF locked <> wanted THEN
    PERFORM user_messages_key_violation(true, 'messages', 'message_id');
  END IF;
  SELECT count(*), count(l.id) INTO wanted, locked FROM (SELECT DISTINCT user_id FROM written) AS w
    LEFT JOIN LATERAL (SELECT u.id FROM users AS u WHERE u.id = w.user_id FOR KEY SHARE) AS l ON true;
  IF locked <> wanted THEN
    PERFORM user_messages_key_violation(true, 'users', 'user_id');
  END IF;
  RETURN NULL;
END`,
  );
  await sql`CREATE TRIGGER user_messages_keys_inserted AFTER INSERT ON user_messages
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION user_messages_keys_written()`.execute(db);

  await fn(
    "user_messages_key_updated",
    sql`BEGIN
  PERFORM 1 FROM messages WHERE id = NEW.message_id FOR KEY SHARE;
  IF NOT FOUND THEN
    PERFORM user_messages_key_violation(true, 'messages', 'message_id');
  END IF;
  PERFORM 1 FROM users WHERE id = NEW.user_id FOR KEY SHARE;
  IF NOT FOUND THEN
    PERFORM user_messages_key_violation(true, 'users', 'user_id');
  END IF;
  RETURN NULL;
END`,
  );
  await sql`CREATE TRIGGER user_messages_key_updated AFTER UPDATE OF user_id, message_id ON user_messages
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.message_id IS DISTINCT FROM NEW.message_id)
    EXECUTE FUNCTION user_messages_key_updated()`.execute(db);

  // The referenced side. TG_ARGV[0] is the user_messages column naming the table's rows; each branch is an
  // index look-up (the primary key leads with user_id; user_messages_message). A statement trigger for deletes
  // (`gone`: the deleted rows), a row trigger on the id column for renumbering (other updates do not fire it).
  const referenced = (ids: string) => sql`BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'deleting or renumbering % needs READ COMMITTED (its flag rows are checked with the statement''s snapshot)', TG_TABLE_NAME
      USING ERRCODE = 'feature_not_supported';
  END IF;
  IF (TG_ARGV[0] = 'user_id' AND EXISTS (SELECT 1 FROM user_messages AS um WHERE um.user_id IN (${sql.raw(ids)}) FOR KEY SHARE OF um))
    OR (TG_ARGV[0] = 'message_id' AND EXISTS (SELECT 1 FROM user_messages AS um WHERE um.message_id IN (${sql.raw(ids)}) FOR KEY SHARE OF um)) THEN
    PERFORM user_messages_key_violation(false, TG_TABLE_NAME, TG_ARGV[0]);
  END IF;
  RETURN NULL;
END`;
  await fn("user_messages_referenced_gone", referenced("SELECT g.id FROM gone AS g"));
  await fn("user_messages_referenced_renumbered", referenced("OLD.id"));
  await fn(
    "user_messages_referenced_truncated",
    sql`BEGIN
  IF EXISTS (SELECT 1 FROM user_messages) THEN
    RAISE EXCEPTION 'cannot truncate table "%" while user_messages has rows (name user_messages in the TRUNCATE)', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END`,
  );
  for (const [table, column] of [
    ["messages", "message_id"],
    ["users", "user_id"],
  ] as const) {
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_deleted`)} AFTER DELETE ON ${sql.table(table)}
      REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION user_messages_referenced_gone(${sql.lit(column)})`.execute(db);
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_renumbered`)} AFTER UPDATE OF id ON ${sql.table(table)}
      FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION user_messages_referenced_renumbered(${sql.lit(column)})`.execute(db);
    await sql`CREATE TRIGGER ${sql.id(`${table}_user_messages_truncated`)} AFTER TRUNCATE ON ${sql.table(table)}
      FOR EACH STATEMENT EXECUTE FUNCTION user_messages_referenced_truncated()`.execute(db);
  }
}
