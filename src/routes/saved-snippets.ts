// Saved snippets: GET/POST /saved_snippets, PATCH/DELETE
// /saved_snippets/{saved_snippet_id}. Every user, guests and bots included,
// has their own; another user's snippet does not exist for them.
import { createSavedSnippet, deleteSavedSnippet, editSavedSnippet } from "../actions/saved-snippets.ts";
import { MAX_SNIPPET_CONTENT_LENGTH, MAX_SNIPPET_TITLE_LENGTH } from "../domain/saved-items.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { savedSnippetsOf } from "../queries/saved-snippets.ts";

export const savedSnippetsRoutes = [
  defineRoute({
    method: "GET",
    path: "/saved_snippets",
    auth: "api",
    params: {},
    handler: async ({ services, user }) => ({ saved_snippets: await savedSnippetsOf(services.storage.db, user.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/saved_snippets",
    auth: "api",
    params: {
      title: param.nonBlank(MAX_SNIPPET_TITLE_LENGTH).required(),
      content: param.nonBlank(MAX_SNIPPET_CONTENT_LENGTH).required(),
    },
    handler: async ({ services, realm, user }, p) => ({ saved_snippet_id: await createSavedSnippet(services, realm, user, p.title, p.content) }),
  }),

  defineRoute({
    method: "PATCH",
    path: "/saved_snippets/:saved_snippet_id",
    auth: "api",
    params: {
      saved_snippet_id: param.int().required(),
      title: param.nonBlank(MAX_SNIPPET_TITLE_LENGTH),
      content: param.nonBlank(MAX_SNIPPET_CONTENT_LENGTH),
    },
    handler: async ({ services, realm, user }, p) => {
      await editSavedSnippet(services, realm, user, p.saved_snippet_id, { title: p.title, content: p.content });
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/saved_snippets/:saved_snippet_id",
    auth: "api",
    params: { saved_snippet_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await deleteSavedSnippet(services, realm, user, p.saved_snippet_id);
    },
  }),
];
