// Alert words: per-user words whose appearance in a message sets the
// has_alert_word flag for that user (Zulip's AlertWord).
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("alert_words")
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("word", "text", (c) => c.notNull())
    // word lowercased in JavaScript: a user's words are unique case-insensitively.
    .addColumn("word_key", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("alert_words_pk", ["user_id", "word_key"])
    .execute();
}
