// "Forgot your password?" (issue 20): an email with a one-time link, and
// setting a new password through it. The link's token is stored as its
// SHA-256, lasts 24 hours, works once, and dies with the password it was
// made for. Asking never tells whether an account exists: every address gets
// the same answer, and the email (if any) is sent after the reply.
import { checkPassword } from "../domain/users.ts";
import { passwordAuthEnabled, parseRealmSettings } from "../domain/realm-settings.ts";
import { sendEmails, type Logger } from "../mail.ts";
import { getUserByDeliveryEmail, getUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { realmForRequest } from "./auth.ts";
import { hashPassword } from "./credentials.ts";
import { afterPasswordChange, createSession, hashToken, randomToken, type NewSession } from "./sessions.ts";

/** How long a reset link works (the sessions contract: 24 hours; Django's default is three days). */
export const RESET_TOKEN_SECONDS = 24 * 3600;

/** Reset emails per account (Zulip's password_reset_form_by_email rule): 2 an hour, 5 a day. */
const RESET_EMAIL_LIMITS: readonly [windowSeconds: number, max: number][] = [
  [3600, 2],
  [86400, 5],
];

export function resetLinkPath(token: string): string {
  return `/accounts/password/reset/${token}/`;
}

function canResetPassword(realm: Realm, user: User | undefined): user is User {
  return user !== undefined && user.is_active && !user.is_bot && !realm.deactivated && passwordAuthEnabled(parseRealmSettings(realm.settings));
}

/**
 * POST /accounts/password/reset/: if `email` is an active human account's
 * (and password sign-in is on, and the account has not had too many such
 * emails lately), stores a new token and emails its link. The email goes out
 * in the background, so the reply takes as long whether or not it is sent.
 */
export async function requestPasswordReset(services: Services, email: string, log?: Logger): Promise<void> {
  const db = services.storage.db;
  const realm = await realmForRequest(services);
  const address = email.trim();
  const user = address === "" ? undefined : await getUserByDeliveryEmail(db, realm.id, address);
  const now = services.now();
  await db.deleteFrom("password_reset_tokens").where("expires_at", "<=", now).execute();
  if (!canResetPassword(realm, user)) return;
  for (const [windowSeconds, max] of RESET_EMAIL_LIMITS) {
    const recent = await db
      .selectFrom("password_reset_tokens")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "=", user.id)
      .where("created_at", ">", now - windowSeconds)
      .executeTakeFirstOrThrow();
    if (Number(recent.n) >= max) return;
  }
  const token = randomToken();
  await db.insertInto("password_reset_tokens").values({ token_hash: hashToken(token), user_id: user.id, created_at: now, expires_at: now + RESET_TOKEN_SECONDS }).execute();
  const link = services.config.externalUrl + resetLinkPath(token);
  const text = [
    `Hi ${user.full_name},`,
    "",
    `Someone (hopefully you) asked to reset the password of your account (${user.delivery_email}) in ${realm.name} at ${services.config.externalUrl}.`,
    "",
    "To choose a new password, open this link within 24 hours:",
    link,
    "",
    "The link works once. If you did not ask for this, ignore this email: your password stays as it is.",
  ].join("\n");
  void sendEmails(services.config, [{ to: user.delivery_email, subject: `Reset your password for ${realm.name}`, text, kind: "password_reset" }], log);
}

/** The account a reset link's token (still) resets, or undefined when the link is unknown, used, expired or its account cannot sign in. */
export async function userForResetToken(services: Services, token: string): Promise<User | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const db = services.storage.db;
  const row = await db
    .selectFrom("password_reset_tokens")
    .select("user_id")
    .where("token_hash", "=", hashToken(token))
    .where("expires_at", ">", services.now())
    .executeTakeFirst();
  if (!row) return undefined;
  const realm = await realmForRequest(services);
  const user = await getUserById(db, realm.id, row.user_id);
  return canResetPassword(realm, user) ? user : undefined;
}

export type ResetResult = { ok: true; session: NewSession } | { ok: false; invalidLink: true } | { ok: false; error: string };

/**
 * POST /accounts/password/reset/{token}/: sets the new password, uses up the
 * token (and every other of the account's), ends the account's sessions and
 * signs this browser in with a new one — all in one transaction, so two
 * posts of one link cannot both succeed.
 */
export async function resetPassword(services: Services, token: string, newPassword: string, confirmation: string): Promise<ResetResult> {
  const user = await userForResetToken(services, token);
  if (!user) return { ok: false, invalidLink: true };
  if (newPassword !== confirmation) return { ok: false, error: "The two password fields didn't match." };
  try {
    checkPassword(newPassword);
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
  const passwordHash = await hashPassword(newPassword);
  return services.storage.db.transaction().execute(async (trx): Promise<ResetResult> => {
    const used = await trx.deleteFrom("password_reset_tokens").where("token_hash", "=", hashToken(token)).where("expires_at", ">", services.now()).executeTakeFirst();
    if (Number(used.numDeletedRows) !== 1) return { ok: false, invalidLink: true };
    await trx.updateTable("users").set({ password_hash: passwordHash }).where("id", "=", user.id).execute();
    await afterPasswordChange(trx, user.id);
    return { ok: true, session: await createSession(services, user.id, trx) };
  });
}
