// Messages and what hangs off them: one recipient row per conversation (a
// channel, or one set of direct-message participants), a flags row per
// (user, message) as in Zulip's UserMessage, reactions, uploaded files and
// the messages that link them, per-user topic visibility, and a full-text
// index in each database's own engine (FTS5 on SQLite, tsvector on PostgreSQL).
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);

  await db.schema
    .createTable("recipients")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    // 2: a channel (channel_id); 3: a direct-message conversation (dm_key).
    .addColumn("type", "integer", (c) => c.notNull())
    .addColumn("channel_id", "integer", (c) => c.references("channels.id"))
    // The participants' user IDs, ascending, comma-separated ("7" for notes to self).
    .addColumn("dm_key", "text")
    .execute();
  await db.schema.createIndex("recipients_channel").unique().on("recipients").column("channel_id").execute();
  await db.schema.createIndex("recipients_dm_key").unique().on("recipients").columns(["realm_id", "dm_key"]).execute();

  await db.schema
    .createTable("messages")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("sender_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("recipient_id", "integer", (c) => c.notNull().references("recipients.id"))
    // Channel messages only: the channel and the topic ('' is the empty topic).
    .addColumn("channel_id", "integer", (c) => c.references("channels.id"))
    .addColumn("topic", "text", (c) => c.notNull().defaultTo(""))
    // topic lowercased in JavaScript: topics match case-insensitively.
    .addColumn("topic_key", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("content", "text", (c) => c.notNull())
    .addColumn("rendered_content", "text", (c) => c.notNull())
    .addColumn("date_sent", "bigint", (c) => c.notNull())
    .addColumn("sending_client", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("last_edit_time", "bigint")
    .addColumn("last_moved_time", "bigint")
    // JSON array of edit snapshots, newest first, as Zulip stores it.
    .addColumn("edit_history", "text")
    .addColumn("has_attachment", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("has_image", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("has_link", "boolean", (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema.createIndex("messages_recipient").on("messages").columns(["recipient_id", "id"]).execute();
  await db.schema.createIndex("messages_channel_topic").on("messages").columns(["channel_id", "topic_key", "id"]).execute();
  // Narrows walk a conversation newest first: by recipient (a channel or a DM), and by channel topic.
  await db.schema.createIndex("messages_recipient_topic").on("messages").columns(["recipient_id", "topic_key", "id"]).execute();
  await db.schema.createIndex("messages_sender").on("messages").columns(["sender_id", "id"]).execute();
  await db.schema.createIndex("messages_realm").on("messages").columns(["realm_id", "id"]).execute();

  await db.schema
    .createTable("user_messages")
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("message_id", "integer", (c) => c.notNull().references("messages.id"))
    // Bit set of Zulip's UserMessage flags (domain/message-flags.ts).
    .addColumn("flags", "integer", (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint("user_messages_pk", ["user_id", "message_id"])
    .execute();
  await db.schema.createIndex("user_messages_message").on("user_messages").column("message_id").execute();
  // Partial indexes for the flags people narrow by, as Zulip has them:
  // unread (read = 1 unset), starred (2), any mention (8 | 16 | 32 | 64), direct (2048).
  await sql`CREATE INDEX user_messages_unread ON user_messages (user_id, message_id) WHERE (flags & 1) = 0`.execute(db);
  await sql`CREATE INDEX user_messages_starred ON user_messages (user_id, message_id) WHERE (flags & 2) <> 0`.execute(db);
  await sql`CREATE INDEX user_messages_mentioned ON user_messages (user_id, message_id) WHERE (flags & 120) <> 0`.execute(db);
  await sql`CREATE INDEX user_messages_private ON user_messages (user_id, message_id) WHERE (flags & 2048) <> 0`.execute(db);

  await db.schema
    .createTable("reactions")
    .addColumn("id", id.type, id.build)
    .addColumn("message_id", "integer", (c) => c.notNull().references("messages.id"))
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("emoji_name", "text", (c) => c.notNull())
    .addColumn("emoji_code", "text", (c) => c.notNull())
    .addColumn("reaction_type", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("reactions_unique")
    .unique()
    .on("reactions")
    .columns(["message_id", "user_id", "reaction_type", "emoji_code"])
    .execute();

  await db.schema
    .createTable("attachments")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("owner_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("path_id", "text", (c) => c.notNull().unique())
    .addColumn("file_name", "text", (c) => c.notNull())
    .addColumn("content_type", "text", (c) => c.notNull())
    .addColumn("size", "bigint", (c) => c.notNull())
    // Milliseconds, as the API reports it.
    .addColumn("create_time", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("attachments_owner").on("attachments").column("owner_id").execute();

  await db.schema
    .createTable("attachment_messages")
    .addColumn("attachment_id", "integer", (c) => c.notNull().references("attachments.id"))
    .addColumn("message_id", "integer", (c) => c.notNull().references("messages.id"))
    .addPrimaryKeyConstraint("attachment_messages_pk", ["attachment_id", "message_id"])
    .execute();
  await db.schema.createIndex("attachment_messages_message").on("attachment_messages").column("message_id").execute();

  await db.schema
    .createTable("user_topics")
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("channel_id", "integer", (c) => c.notNull().references("channels.id"))
    .addColumn("topic", "text", (c) => c.notNull())
    .addColumn("topic_key", "text", (c) => c.notNull())
    .addColumn("visibility_policy", "integer", (c) => c.notNull())
    .addColumn("last_updated", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("user_topics_pk", ["user_id", "channel_id", "topic_key"])
    .execute();

  if (dialect === "postgres") {
    // 'simple' keeps words as written (no stemming), like SQLite's unicode61.
    await sql`ALTER TABLE messages ADD COLUMN search_tsv tsvector
      GENERATED ALWAYS AS (to_tsvector('simple', topic || ' ' || content)) STORED`.execute(db);
    await sql`CREATE INDEX messages_search ON messages USING gin (search_tsv)`.execute(db);
  } else {
    // External-content FTS5 table kept in step by triggers, so edits and deletes stay searchable correctly.
    await sql`CREATE VIRTUAL TABLE messages_fts USING fts5(topic, content, content='messages', content_rowid='id', tokenize='unicode61')`.execute(db);
    await sql`CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
      INSERT INTO messages_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);
    END`.execute(db);
    await sql`CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
      INSERT INTO messages_fts(messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
    END`.execute(db);
    await sql`CREATE TRIGGER messages_fts_update AFTER UPDATE OF topic, content ON messages BEGIN
      INSERT INTO messages_fts(messages_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
      INSERT INTO messages_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);
    END`.execute(db);
  }
}
