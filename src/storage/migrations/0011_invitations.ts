// Invitations (issue 8): email invitations and reusable (multiuse) links share
// one table, as Zulip's PreregistrationUser and MultiuseInvite share one
// Confirmation key space. `kind` tells them apart; an email invitation has the
// invitee's address. Channel and group IDs are JSON lists (the channels or
// groups may be archived or deactivated by sign-up time; sign-up skips those).
// - status: pending, used (an email invitation someone signed up with) or
//   revoked. A reusable link stays pending until revoked or expired.
// - invitation_sends: one row per invitation email sent (first send and
//   resends), for the organization's daily invitation limit.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("invitations")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("kind", "text", (c) => c.notNull())
    // Email invitations only: the address as given, and lower-cased for lookups.
    .addColumn("email", "text")
    .addColumn("email_key", "text")
    .addColumn("confirmation_key", "text", (c) => c.notNull().unique())
    .addColumn("referrer_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("invited_as", "integer", (c) => c.notNull())
    .addColumn("channel_ids", "text", (c) => c.notNull())
    .addColumn("group_ids", "text", (c) => c.notNull())
    .addColumn("include_realm_default_subscriptions", "boolean", (c) => c.notNull())
    .addColumn("notify_referrer_on_join", "boolean", (c) => c.notNull())
    // NULL: the organization's welcome_message_custom_text; "": no custom message.
    .addColumn("welcome_message_custom_text", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    // NULL: never expires.
    .addColumn("expires_at", "bigint")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("created_user_id", "integer", (c) => c.references("users.id"))
    .execute();
  await db.schema.createIndex("invitations_realm_status").on("invitations").columns(["realm_id", "status", "id"]).execute();
  await db.schema.createIndex("invitations_realm_email").on("invitations").columns(["realm_id", "email_key"]).execute();

  await db.schema
    .createTable("invitation_sends")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("invitation_id", "integer", (c) => c.notNull().references("invitations.id"))
    .addColumn("sent_at", "bigint", (c) => c.notNull())
    .execute();
  await sql`CREATE INDEX invitation_sends_realm_time ON invitation_sends (realm_id, sent_at)`.execute(db);
}
