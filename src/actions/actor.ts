// The acting user with the group memberships permission checks need.
import type { Kysely } from "kysely";
import type { Actor } from "../domain/group-settings.ts";
import { groupIdsOfUser } from "../queries/user-groups.ts";
import type { Database, User } from "../storage/schema.ts";

/** Pass the transaction when inside one. */
export async function actorFor(db: Kysely<Database>, user: Pick<User, "id" | "role">): Promise<Actor> {
  return { id: user.id, role: user.role, groupIds: await groupIdsOfUser(db, user.id) };
}
