// Reading invitations: GET /invites (Zulip's do_get_invites_controlled_by_user)
// and looking an invitation up by its link key.
import type { Kysely, Transaction } from "kysely";
import { InvitationKind, InvitationStatus, invitationUrl } from "../domain/invitations.ts";
import { isAdmin } from "../domain/roles.ts";
import type { Database, Invitation, User } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiEmailInvite {
  email: string;
  invited_by_user_id: number;
  invited: number;
  expiry_date: number | null;
  id: number;
  invited_as: number;
  is_multiuse: false;
  notify_referrer_on_join: boolean;
}

export interface ApiMultiuseInvite {
  invited_by_user_id: number;
  invited: number;
  expiry_date: number | null;
  id: number;
  link_url: string;
  invited_as: number;
  is_multiuse: true;
}

/** One invitation as GET /invites shows it (Zulip's PreregistrationInviteData / MultiuseInviteData). */
export function formatInvitation(externalUrl: string, row: Invitation): ApiEmailInvite | ApiMultiuseInvite {
  if (row.kind === InvitationKind.MULTIUSE) {
    return {
      invited_by_user_id: row.referrer_id,
      invited: row.created_at,
      expiry_date: row.expires_at,
      id: row.id,
      link_url: invitationUrl(externalUrl, row.confirmation_key),
      invited_as: row.invited_as,
      is_multiuse: true,
    };
  }
  return {
    email: row.email!,
    invited_by_user_id: row.referrer_id,
    invited: row.created_at,
    expiry_date: row.expires_at,
    id: row.id,
    invited_as: row.invited_as,
    is_multiuse: false,
    notify_referrer_on_join: row.notify_referrer_on_join,
  };
}

/**
 * The invitations a user controls and can still be used: every one in the
 * organization for administrators, their own for others. Email invitations
 * first, then reusable links, each oldest first (as Zulip lists them).
 */
export async function invitesControlledBy(db: Db, externalUrl: string, user: User, now: number): Promise<(ApiEmailInvite | ApiMultiuseInvite)[]> {
  let query = db
    .selectFrom("invitations")
    .selectAll()
    .where("realm_id", "=", user.realm_id)
    .where("status", "=", InvitationStatus.PENDING)
    .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">=", now)]));
  if (!isAdmin(user.role)) query = query.where("referrer_id", "=", user.id);
  const rows = await query.orderBy("id").execute();
  const emailInvites = rows.filter((r) => r.kind === InvitationKind.EMAIL);
  const links = rows.filter((r) => r.kind === InvitationKind.MULTIUSE);
  return [...emailInvites, ...links].map((row) => formatInvitation(externalUrl, row));
}

export async function invitationByKey(db: Db, realmId: number, key: string): Promise<Invitation | undefined> {
  return db.selectFrom("invitations").selectAll().where("realm_id", "=", realmId).where("confirmation_key", "=", key).executeTakeFirst();
}

export async function invitationById(db: Db, realmId: number, id: number): Promise<Invitation | undefined> {
  return db.selectFrom("invitations").selectAll().where("realm_id", "=", realmId).where("id", "=", id).executeTakeFirst();
}

/** Invitation emails the organization sent in the 24 hours before `now` (first sends and resends). */
export async function invitationsSentSince(db: Db, realmId: number, since: number): Promise<number> {
  const row = await db
    .selectFrom("invitation_sends")
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .where("realm_id", "=", realmId)
    .where("sent_at", ">", since)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
