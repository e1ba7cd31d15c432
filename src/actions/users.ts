// Every change to user accounts: permission checks, the writes in one
// transaction, then the events the change causes (Zulip's do_* functions).
import type { Kysely, Transaction } from "kysely";
import { ApiError, badRequest, mustBeAdmin, mustBeOwner, noSuchUser } from "../http/errors.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { isAdmin, isOwner, Role } from "../domain/roles.ts";
import { directSystemGroupsForRole, isFullMember, type SystemGroupName } from "../domain/system-groups.ts";
import {
  apiEmailFor,
  canSeeDeliveryEmail,
  checkFullName,
  checkPassword,
  isValidEmail,
  isValidTimezone,
} from "../domain/users.ts";
import type { ClientEvent } from "../events/notifier.ts";
import {
  countActiveHumanOwners,
  countActiveHumans,
  formatUser,
  getUserByDeliveryEmail,
  getUserById,
  listActiveUsers,
  type ApiUser,
} from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Database, Realm, User } from "../storage/schema.ts";
import { generateApiKey, hashPassword, verifyPassword } from "./credentials.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface NewUserInput {
  email: string;
  fullName: string;
  /** Already hashed; null for accounts that cannot log in with a password. */
  passwordHash: string | null;
  role: number;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  isSystemBot?: boolean;
  timezone?: string;
}

async function systemGroupIds(db: Db, realmId: number): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom("user_groups")
    .select(["id", "name"])
    .where("realm_id", "=", realmId)
    .where("is_system_group", "=", true)
    .execute();
  return new Map(rows.map((r) => [r.name, r.id]));
}

function resolveGroups(ids: Map<string, number>, names: SystemGroupName[]): number[] {
  return names.map((name) => {
    const id = ids.get(name);
    if (id === undefined) throw new Error(`system group ${name} missing`);
    return id;
  });
}

/** Inserts a user and its system-group memberships. Call inside a transaction. */
export async function insertUser(trx: Db, services: Services, realm: Realm, input: NewUserInput): Promise<User> {
  const settings = parseRealmSettings(realm.settings);
  const now = services.now();
  const visibility = settings.default_email_address_visibility;
  const inserted = await trx
    .insertInto("users")
    .values({
      realm_id: realm.id,
      email: input.email,
      delivery_email: input.email,
      full_name: input.fullName,
      password_hash: input.passwordHash,
      api_key: generateApiKey(),
      role: input.role,
      is_bot: input.isBot ?? false,
      bot_type: input.botType ?? null,
      bot_owner_id: input.botOwnerId ?? null,
      is_system_bot: input.isSystemBot ?? false,
      timezone: input.timezone ?? "",
      avatar_source: "G",
      avatar_version: 1,
      email_address_visibility: visibility,
      date_joined: now,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  // The fake API email embeds the ID, so it can only be written once the ID exists.
  // Bots' addresses are never hidden, as in Zulip.
  const apiEmail = input.isBot ? input.email : apiEmailFor(inserted.id, input.email, visibility, services.config.fakeEmailDomain);
  if (apiEmail !== input.email) {
    await trx.updateTable("users").set({ email: apiEmail }).where("id", "=", inserted.id).execute();
  }
  const groups = await systemGroupIds(trx, realm.id);
  const memberOf = resolveGroups(groups, directSystemGroupsForRole(input.role, isFullMember(now, settings.waiting_period_threshold, now)));
  await trx
    .insertInto("user_group_members")
    .values(memberOf.map((groupId) => ({ group_id: groupId, user_id: inserted.id })))
    .execute();
  const user = await getUserById(trx, realm.id, inserted.id);
  if (!user) throw new Error("inserted user vanished");
  return user;
}

/**
 * Sends an event about `subject` to every active user of the organization,
 * built per viewer so that the real email address reaches only those who may
 * see it.
 */
async function notifyRealmUsers(
  services: Services,
  realmId: number,
  subject: User,
  build: (person: ApiUser) => ClientEvent,
): Promise<void> {
  const recipients = await listActiveUsers(services.storage.db, realmId);
  const withEmail: number[] = [];
  const withoutEmail: number[] = [];
  for (const r of recipients) {
    const sees = subject.is_bot || r.id === subject.id || canSeeDeliveryEmail(subject.email_address_visibility, r.role);
    (sees ? withEmail : withoutEmail).push(r.id);
  }
  const asSeenBy = (viewer: { id: number; role: number }) => build(formatUser(services.config, subject, viewer));
  // Any viewer of the class gives the same object, except the subject itself, which is in withEmail.
  services.notifier.notify(realmId, asSeenBy({ id: subject.id, role: Role.OWNER }), withEmail);
  if (withoutEmail.length > 0) services.notifier.notify(realmId, asSeenBy({ id: -1, role: Role.GUEST }), withoutEmail);
}

/** Sends realm_user update events carrying only the changed fields (which never include emails). */
async function notifyUserUpdate(services: Services, realmId: number, person: Record<string, unknown>): Promise<void> {
  const recipients = await listActiveUsers(services.storage.db, realmId);
  services.notifier.notify(realmId, { type: "realm_user", op: "update", person }, recipients.map((r) => r.id));
}

async function notifyGroupMembership(services: Services, realmId: number, op: "add_members" | "remove_members", groupIds: number[], userId: number): Promise<void> {
  if (groupIds.length === 0) return;
  const recipients = (await listActiveUsers(services.storage.db, realmId)).map((r) => r.id);
  for (const groupId of groupIds) {
    services.notifier.notify(realmId, { type: "user_group", op, group_id: groupId, user_ids: [userId] }, recipients);
  }
}

export interface CreateUserInput {
  email: string;
  password: string | null;
  fullName: string;
  role?: number;
  isBot?: boolean;
  botType?: number;
  botOwnerId?: number | null;
}

/**
 * Creates an account. `actor` is the administrator doing it over the API, or
 * null for an operator at the command line.
 */
export async function createUser(services: Services, realm: Realm, actor: User | null, input: CreateUserInput): Promise<User> {
  if (actor && !isAdmin(actor.role)) throw mustBeAdmin();
  const fullName = checkFullName(input.fullName);
  const email = input.email.trim();
  if (!isValidEmail(email)) throw badRequest("Bad name or username");
  if (input.password !== null) checkPassword(input.password);
  const role = input.role ?? Role.MEMBER;
  if (actor && isOwner(role) && !isOwner(actor.role)) throw mustBeOwner();
  const db = services.storage.db;
  if (await getUserByDeliveryEmail(db, realm.id, email)) throw badRequest(`Email '${email}' already in use`);
  const passwordHash = input.password === null ? null : await hashPassword(input.password);
  let user: User;
  try {
    user = await db.transaction().execute((trx) =>
      insertUser(trx, services, realm, {
        email,
        fullName,
        passwordHash,
        role,
        isBot: input.isBot ?? false,
        botType: input.isBot ? (input.botType ?? 1) : null,
        botOwnerId: input.isBot ? (input.botOwnerId ?? actor?.id ?? null) : null,
      }),
    );
  } catch (error) {
    // Two requests for one address at once: the unique index decides.
    if (await getUserByDeliveryEmail(db, realm.id, email)) throw badRequest(`Email '${email}' already in use`);
    throw error;
  }
  await notifyRealmUsers(services, realm.id, user, (person) => ({ type: "realm_user", op: "add", person }));
  return user;
}

/** The target of an administrative action on another account. */
async function accessUserForAdmin(services: Services, realm: Realm, actor: User, targetId: number, allowBots: boolean): Promise<User> {
  const target = await getUserById(services.storage.db, realm.id, targetId);
  if (!target || target.is_system_bot || (target.is_bot && !allowBots)) throw noSuchUser();
  // A bot's owner administers it; other accounts need an organization administrator.
  const ownsBot = target.is_bot && target.bot_owner_id === actor.id;
  if (!isAdmin(actor.role) && !ownsBot) throw badRequest("Insufficient permission");
  return target;
}

/** Whether `user` is the organization's only active human owner. */
async function isLastOwner(services: Services, user: User): Promise<boolean> {
  return isOwner(user.role) && !user.is_bot && user.is_active && (await countActiveHumanOwners(services.storage.db, user.realm_id)) <= 1;
}

async function changeRole(services: Services, realm: Realm, target: User, newRole: number): Promise<void> {
  const settings = parseRealmSettings(realm.settings);
  const now = services.now();
  const full = (role: number) => directSystemGroupsForRole(role, isFullMember(target.date_joined, settings.waiting_period_threshold, now));
  const { added, removed } = await services.storage.db.transaction().execute(async (trx) => {
    const ids = await systemGroupIds(trx, realm.id);
    const before = resolveGroups(ids, full(target.role));
    const after = resolveGroups(ids, full(newRole));
    const removed = before.filter((id) => !after.includes(id));
    const added = after.filter((id) => !before.includes(id));
    await trx.updateTable("users").set({ role: newRole }).where("id", "=", target.id).execute();
    if (removed.length > 0) {
      await trx.deleteFrom("user_group_members").where("user_id", "=", target.id).where("group_id", "in", removed).execute();
    }
    if (added.length > 0) {
      await trx.insertInto("user_group_members").values(added.map((g) => ({ group_id: g, user_id: target.id }))).execute();
    }
    return { added, removed };
  });
  await notifyUserUpdate(services, realm.id, { user_id: target.id, role: newRole });
  await notifyGroupMembership(services, realm.id, "remove_members", removed, target.id);
  await notifyGroupMembership(services, realm.id, "add_members", added, target.id);
}

async function changeFullName(services: Services, realmId: number, target: User, fullName: string): Promise<void> {
  await services.storage.db.updateTable("users").set({ full_name: fullName }).where("id", "=", target.id).execute();
  await notifyUserUpdate(services, realmId, { user_id: target.id, full_name: fullName });
}

export interface UpdateUserInput {
  fullName?: string | undefined;
  role?: number | undefined;
}

/** PATCH /users/{user_id}: an administrator (or a bot's owner) changes another account. */
export async function updateUser(services: Services, realm: Realm, actor: User, targetId: number, input: UpdateUserInput): Promise<void> {
  const target = await accessUserForAdmin(services, realm, actor, targetId, true);
  // Validate everything before writing anything.
  const fullName = input.fullName !== undefined && input.fullName.trim() !== "" ? checkFullName(input.fullName) : undefined;
  const roleChanges = input.role !== undefined && input.role !== target.role;
  if (roleChanges) {
    const newRole = input.role as number;
    if ((isOwner(newRole) || isOwner(target.role)) && !isOwner(actor.role)) throw mustBeOwner();
    if (!isAdmin(actor.role)) throw mustBeAdmin();
    if (await isLastOwner(services, target)) {
      throw badRequest("The owner permission cannot be removed from the only organization owner.");
    }
    await changeRole(services, realm, target, newRole);
  }
  if (fullName !== undefined && fullName !== target.full_name) await changeFullName(services, realm.id, target, fullName);
}

async function setActive(services: Services, realm: Realm, user: User, active: boolean): Promise<void> {
  await services.storage.db.updateTable("users").set({ is_active: active }).where("id", "=", user.id).execute();
  // Sent to everyone active, which after a reactivation includes the user.
  await notifyUserUpdate(services, realm.id, { user_id: user.id, is_active: active });
}

/** Deactivates an account and the bots it owns (as Zulip does), in one transaction. */
async function deactivateWithBots(services: Services, realm: Realm, user: User): Promise<void> {
  const bots = await services.storage.db.transaction().execute(async (trx) => {
    await trx.updateTable("users").set({ is_active: false }).where("id", "=", user.id).execute();
    const owned = await trx
      .selectFrom("users")
      .select("id")
      .where("realm_id", "=", realm.id)
      .where("bot_owner_id", "=", user.id)
      .where("is_active", "=", true)
      .execute();
    if (owned.length > 0) {
      await trx.updateTable("users").set({ is_active: false }).where("id", "in", owned.map((b) => b.id)).execute();
    }
    return owned.map((b) => b.id);
  });
  for (const id of [user.id, ...bots]) await notifyUserUpdate(services, realm.id, { user_id: id, is_active: false });
}

/** DELETE /users/{user_id}. */
export async function deactivateUser(services: Services, realm: Realm, actor: User, targetId: number): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  const target = await accessUserForAdmin(services, realm, actor, targetId, false);
  if (!target.is_active) throw badRequest("User is deactivated");
  if (isOwner(target.role) && !isOwner(actor.role)) throw mustBeOwner();
  if (await isLastOwner(services, target)) throw badRequest("Cannot deactivate the only organization owner");
  await deactivateWithBots(services, realm, target);
}

/** DELETE /users/me. */
export async function deactivateOwnAccount(services: Services, realm: Realm, actor: User): Promise<void> {
  if ((await countActiveHumans(services.storage.db, realm.id)) <= 1) {
    throw new ApiError(400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only user.", { is_last_owner: false, entity: "user" });
  }
  if (await isLastOwner(services, actor)) {
    throw new ApiError(400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only organization owner.", {
      is_last_owner: true,
      entity: "organization owner",
    });
  }
  await deactivateWithBots(services, realm, actor);
}

/** POST /users/{user_id}/reactivate. */
export async function reactivateUser(services: Services, realm: Realm, actor: User, targetId: number): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  const target = await accessUserForAdmin(services, realm, actor, targetId, true);
  if (target.is_active) throw badRequest("User is already active");
  await setActive(services, realm, target, true);
}

export interface OwnSettingsInput {
  fullName?: string | undefined;
  oldPassword?: string | undefined;
  newPassword?: string | undefined;
  timezone?: string | undefined;
}

/** PATCH /settings: a human changes their own account. */
export async function changeOwnSettings(services: Services, realm: Realm, actor: User, input: OwnSettingsInput): Promise<void> {
  const db = services.storage.db;
  // Where name changes are disabled, only administrators may rename themselves;
  // Zulip ignores the request from others rather than failing it.
  const nameLocked = parseRealmSettings(realm.settings).name_changes_disabled && !isAdmin(actor.role);
  // Check every value first, so that a bad one changes nothing.
  const fullName = input.fullName !== undefined && !nameLocked ? checkFullName(input.fullName) : undefined;
  if (input.timezone !== undefined && !isValidTimezone(input.timezone)) {
    throw badRequest("timezone is not a recognized time zone");
  }
  let newHash: string | undefined;
  if (input.newPassword !== undefined) {
    // A missing old password counts as an empty, wrong one, as in Zulip.
    if (!(await verifyPassword(actor.password_hash, input.oldPassword ?? ""))) throw badRequest("Wrong password!");
    if (input.newPassword.length < 6) throw badRequest("New password is too weak!");
    newHash = await hashPassword(input.newPassword);
  }

  if (newHash !== undefined) {
    await db.updateTable("users").set({ password_hash: newHash }).where("id", "=", actor.id).execute();
  }
  if (fullName !== undefined && fullName !== actor.full_name) await changeFullName(services, realm.id, actor, fullName);
  if (input.timezone !== undefined && input.timezone !== actor.timezone) {
    await db.updateTable("users").set({ timezone: input.timezone }).where("id", "=", actor.id).execute();
    await notifyUserUpdate(services, realm.id, { user_id: actor.id, timezone: input.timezone });
  }
}
