// A user's saved snippets (Zulip's actions/saved_snippets.py): create, edit
// and delete. Each change sends a `saved_snippets` event to the user alone.
// Titles and contents arrive already stripped and checked (domain/saved-items.ts).
import { savedSnippetNotFound } from "../domain/saved-items.ts";
import { formatSavedSnippet, savedSnippetOf } from "../queries/saved-snippets.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction } from "./transaction.ts";

/** POST /saved_snippets: returns the new snippet's ID. */
export async function createSavedSnippet(services: Services, realm: Realm, user: User, title: string, content: string): Promise<number> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const values = { realm_id: realm.id, user_id: user.id, title, content, date_created: services.now() };
    const { id } = await trx.insertInto("saved_snippets").values(values).returning("id").executeTakeFirstOrThrow();
    pending.add(realm.id, { type: "saved_snippets", op: "add", saved_snippet: formatSavedSnippet({ id, ...values }) }, [user.id]);
    return id;
  });
}

/**
 * PATCH /saved_snippets/{id}. With nothing to change it succeeds at once,
 * without looking the snippet up and without an event, as Zulip does.
 */
export async function editSavedSnippet(
  services: Services,
  realm: Realm,
  user: User,
  snippetId: number,
  change: { title?: string | undefined; content?: string | undefined },
): Promise<void> {
  if (change.title === undefined && change.content === undefined) return;
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const snippet = await savedSnippetOf(trx, user.id, snippetId);
    if (!snippet) throw savedSnippetNotFound();
    const values = {
      ...(change.title !== undefined ? { title: change.title } : {}),
      ...(change.content !== undefined ? { content: change.content } : {}),
    };
    await trx.updateTable("saved_snippets").set(values).where("id", "=", snippet.id).execute();
    pending.add(realm.id, { type: "saved_snippets", op: "update", saved_snippet: formatSavedSnippet({ ...snippet, ...values }) }, [user.id]);
  });
}

/** DELETE /saved_snippets/{id}. */
export async function deleteSavedSnippet(services: Services, realm: Realm, user: User, snippetId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const snippet = await savedSnippetOf(trx, user.id, snippetId);
    if (!snippet) throw savedSnippetNotFound();
    await trx.deleteFrom("saved_snippets").where("id", "=", snippet.id).execute();
    pending.add(realm.id, { type: "saved_snippets", op: "remove", saved_snippet_id: snippet.id }, [user.id]);
  });
}
