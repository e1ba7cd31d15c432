// A user's navigation views (Zulip's views/navigation_views.py and
// actions/navigation_views.py): settings for built-in views and the user's
// own views, identified by URL fragment. Each change sends a
// `navigation_view` event to the user alone. Fragments and names arrive
// already stripped and checked for blanks (domain/saved-items.ts).
import { checkNewViewName, checkViewFragment, checkViewRename, navigationViewExists, navigationViewNotFound } from "../domain/saved-items.ts";
import { formatNavigationView, navigationViewByFragment, navigationViewNameTaken } from "../queries/navigation-views.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction } from "./transaction.ts";

/** POST /navigation_views, in Zulip's order of checks: the name rule, then the fragment, then the name taken. */
export async function addNavigationView(
  services: Services,
  realm: Realm,
  user: User,
  view: { fragment: string; isPinned: boolean; name: string | undefined },
): Promise<void> {
  checkNewViewName(view.fragment, view.name);
  checkViewFragment(view.fragment);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (await navigationViewByFragment(trx, user.id, view.fragment)) throw navigationViewExists();
    if (view.name !== undefined && (await navigationViewNameTaken(trx, user.id, view.name))) throw navigationViewExists();
    const values = { user_id: user.id, fragment: view.fragment, is_pinned: view.isPinned, name: view.name ?? null };
    const { id } = await trx.insertInto("navigation_views").values(values).returning("id").executeTakeFirstOrThrow();
    pending.add(realm.id, { type: "navigation_view", op: "add", navigation_view: formatNavigationView({ id, ...values }) }, [user.id]);
  });
}

/**
 * PATCH /navigation_views/{fragment}. As in Zulip, a name any of the user's
 * views already has (this one's included) is refused before the view is
 * looked up, and a request changing nothing still succeeds with an event
 * whose `data` is empty.
 */
export async function updateNavigationView(
  services: Services,
  realm: Realm,
  user: User,
  fragment: string,
  change: { isPinned?: boolean | undefined; name?: string | undefined },
): Promise<void> {
  checkViewRename(fragment, change.name);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (change.name !== undefined && (await navigationViewNameTaken(trx, user.id, change.name))) throw navigationViewExists();
    const view = await navigationViewByFragment(trx, user.id, fragment);
    if (!view) throw navigationViewNotFound();
    const data = {
      ...(change.name !== undefined ? { name: change.name } : {}),
      ...(change.isPinned !== undefined ? { is_pinned: change.isPinned } : {}),
    };
    if (Object.keys(data).length > 0) await trx.updateTable("navigation_views").set(data).where("id", "=", view.id).execute();
    pending.add(realm.id, { type: "navigation_view", op: "update", fragment: view.fragment, data }, [user.id]);
  });
}

/** DELETE /navigation_views/{fragment}: for a built-in view this drops the user's settings for it. */
export async function removeNavigationView(services: Services, realm: Realm, user: User, fragment: string): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const view = await navigationViewByFragment(trx, user.id, fragment);
    if (!view) throw navigationViewNotFound();
    await trx.deleteFrom("navigation_views").where("id", "=", view.id).execute();
    pending.add(realm.id, { type: "navigation_view", op: "remove", fragment: view.fragment }, [user.id]);
  });
}
