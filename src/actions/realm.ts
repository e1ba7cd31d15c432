// Creating an organization: the realm row, its system groups (nested as in
// Zulip), its settings, its system bots and its owner, in one transaction.
import { checkRealmName, initialRealmSettings } from "../domain/realm-settings.ts";
import { BotType, Role } from "../domain/roles.ts";
import { encodeGroupSetting } from "../domain/group-settings.ts";
import { SYSTEM_GROUPS, SystemGroup, type SystemGroupName } from "../domain/system-groups.ts";
import { USER_GROUP_SETTING_NAMES } from "../domain/user-groups.ts";
import { checkFullName, checkPassword, isValidEmail } from "../domain/users.ts";
import { badRequest } from "../errors.ts";
import { getDefaultRealm } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { hashPassword } from "./credentials.ts";
import type { Trx } from "./transaction.ts";
import { insertUser } from "./users.ts";

/** Server-owned bots every organization has; addresses as in Zulip. */
export const SYSTEM_BOTS = [
  { email: "notification-bot@zulip.com", fullName: "Notification Bot" },
  { email: "welcome-bot@zulip.com", fullName: "Welcome Bot" },
] as const;

export interface CreateRealmInput {
  name: string;
  ownerEmail: string;
  ownerPassword: string;
  ownerFullName: string;
}

export class RealmExistsError extends Error {}

export async function createRealm(services: Services, input: CreateRealmInput): Promise<{ realm: Realm; owner: User }> {
  const name = checkRealmName(input.name);
  const ownerFullName = checkFullName(input.ownerFullName);
  if (!isValidEmail(input.ownerEmail)) throw badRequest("Bad name or username");
  checkPassword(input.ownerPassword);
  const passwordHash = await hashPassword(input.ownerPassword);
  const now = services.now();

  return services.storage.db.transaction().execute(async (trx) => {
    const { realm } = await insertRealm(trx, services, { name, description: "", dateCreated: now });
    const owner = await insertUser(trx, services, realm, {
      email: input.ownerEmail.trim(),
      fullName: ownerFullName,
      passwordHash,
      role: Role.OWNER,
    });
    return { realm, owner };
  });
}

/**
 * The organization's rows inside the caller's transaction: the realm, its
 * system groups, its settings and its system bots. createRealm adds the
 * owner; the Zulip import adds the exported users.
 */
export async function insertRealm(
  trx: Trx,
  services: Services,
  input: { name: string; description: string; dateCreated: number },
): Promise<{ realm: Realm; groupIds: Map<SystemGroupName, number> }> {
  if (await getDefaultRealm(trx)) throw new RealmExistsError("this server already has an organization");
  const { id: realmId } = await trx
    .insertInto("realms")
    .values({ string_id: "", name: input.name, description: input.description, date_created: input.dateCreated, settings: "{}" })
    .returning("id")
    .executeTakeFirstOrThrow();

  const groupIds = new Map<SystemGroupName, number>();
  for (const group of SYSTEM_GROUPS) {
    const { id } = await trx
      .insertInto("user_groups")
      .values({ realm_id: realmId, name: group.name, description: group.description, is_system_group: true })
      .returning("id")
      .executeTakeFirstOrThrow();
    groupIds.set(group.name, id);
  }
  for (const group of SYSTEM_GROUPS) {
    if (group.parent === null) continue;
    await trx
      .insertInto("user_group_subgroups")
      .values({ supergroup_id: groupIds.get(group.parent)!, subgroup_id: groupIds.get(group.name)! })
      .execute();
  }
  // Nobody manages, joins, leaves or mentions a system group: membership follows roles.
  const nobody = encodeGroupSetting(groupIds.get(SystemGroup.NOBODY)!);
  await trx
    .updateTable("user_groups")
    .set(Object.fromEntries(USER_GROUP_SETTING_NAMES.map((column) => [column, nobody])))
    .where("realm_id", "=", realmId)
    .execute();
  await trx
    .updateTable("realms")
    .set({ settings: JSON.stringify(initialRealmSettings(groupIds)) })
    .where("id", "=", realmId)
    .execute();
  const realm = await trx.selectFrom("realms").selectAll().where("id", "=", realmId).executeTakeFirstOrThrow();

  for (const bot of SYSTEM_BOTS) {
    await insertUser(trx, services, realm, {
      email: bot.email,
      fullName: bot.fullName,
      passwordHash: null,
      role: Role.MEMBER,
      isBot: true,
      botType: BotType.GENERIC,
      isSystemBot: true,
    });
  }
  return { realm, groupIds };
}
