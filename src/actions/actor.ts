// The acting user with the group memberships permission checks need.
import type { Kysely } from "kysely";
import type { Actor } from "../domain/group-settings.ts";
import { cachedGroupIdsOfUser, groupIdsOfUser } from "../queries/user-groups.ts";
import type { Storage } from "../storage/database.ts";
import type { Database, User } from "../storage/schema.ts";

/** Pass the transaction when inside one. */
export async function actorFor(db: Kysely<Database>, user: Pick<User, "id" | "role">): Promise<Actor> {
  return { id: user.id, role: user.role, groupIds: await groupIdsOfUser(db, user.id) };
}

/**
 * actorFor with the groups from the process's row cache: on `db` when it is
 * a transaction (which must see its own writes), else from the cache.
 */
export async function cachedActorFor(storage: Storage, user: Pick<User, "id" | "role">, db: Kysely<Database> = storage.db): Promise<Actor> {
  if (db.isTransaction) return actorFor(db, user);
  return { id: user.id, role: user.role, groupIds: await cachedGroupIdsOfUser(storage, user.id) };
}
