// The acting user with the group memberships permission checks need.
import type { Actor } from "../domain/group-settings.ts";
import { groupIdsOfUser } from "../queries/user-groups.ts";
import type { Services } from "../services.ts";
import type { User } from "../storage/schema.ts";

export async function actorFor(services: Services, user: User): Promise<Actor> {
  return { id: user.id, role: user.role, groupIds: await groupIdsOfUser(services.storage.db, user.id) };
}
