// Drafts: GET/POST /drafts, PATCH/DELETE /drafts/{draft_id}. Every user has
// their own (bots and guests too); another user's draft does not exist for
// them. With enable_drafts_synchronization off, every endpoint refuses before
// looking at its parameters, as Zulip's @draft_endpoint does.
import { MAX_ITEMS_PER_REQUEST, MAX_USER_IDS } from "../domain/limits.ts";
import { checkDraftsEnabled, createDrafts, deleteDraft, editDraft } from "../actions/drafts.ts";
import { DRAFT_TYPES, type DraftData } from "../domain/drafts.ts";
import { requiredText } from "../domain/text.ts";
import { badRequest, missingArgument } from "../errors.ts";
import { check, param, type Validator } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { draftsOf } from "../queries/drafts.ts";

/** pydantic's `str`: NUL is left for the draft rules to report in Zulip's words. */
const rawString: Validator<string> = (value, name) => {
  if (typeof value !== "string") throw badRequest(`${name} is not a string`);
  return value;
};

/** `timestamp: int | float | None`. */
const timestampValue: Validator<number | null> = (value, name) => {
  if (value === null) return null;
  if (typeof value !== "number") throw badRequest(`${name} is not a float`);
  return value;
};

/** Zulip's DraftData: these keys and no others; content stripped and not blank (RequiredStringConstraint). */
const draftData: Validator<DraftData> = check.object(
  {
    type: check.oneOf(DRAFT_TYPES),
    to: check.list(check.int, { max: MAX_USER_IDS }),
    topic: rawString,
    content: (value, name) => requiredText(rawString(value, name), name),
    timestamp: timestampValue,
  },
  ["timestamp"],
);

/** A JSON parameter read only once synchronization is known to be on. */
function jsonArgument<T>(raw: string | undefined, name: string, validator: Validator<T>): T {
  if (raw === undefined) throw missingArgument(name);
  return param.json(validator).convert(raw, name);
}

export const draftsRoutes = [
  defineRoute({
    method: "GET",
    path: "/drafts",
    auth: "api",
    params: {},
    handler: async ({ services, user }) => {
      checkDraftsEnabled(user);
      const drafts = await draftsOf(services.storage.db, user.id);
      return { count: drafts.length, drafts };
    },
  }),

  defineRoute({
    method: "POST",
    path: "/drafts",
    auth: "api",
    params: { drafts: param.string() },
    handler: async ({ services, realm, user }, p) => {
      checkDraftsEnabled(user);
      const drafts = jsonArgument(p.drafts, "drafts", check.list(draftData, { max: MAX_ITEMS_PER_REQUEST }));
      return { ids: await createDrafts(services, realm, user, drafts) };
    },
  }),

  defineRoute({
    method: "PATCH",
    path: "/drafts/:draft_id",
    auth: "api",
    params: { draft_id: param.int().required(), draft: param.string() },
    handler: async ({ services, realm, user }, p) => {
      checkDraftsEnabled(user);
      await editDraft(services, realm, user, p.draft_id, jsonArgument(p.draft, "draft", draftData));
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/drafts/:draft_id",
    auth: "api",
    params: { draft_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      checkDraftsEnabled(user);
      await deleteDraft(services, realm, user, p.draft_id);
    },
  }),
];
