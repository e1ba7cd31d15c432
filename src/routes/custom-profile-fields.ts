// Custom profile fields: GET/POST/PATCH (reorder) /realm/profile_fields,
// PATCH/DELETE /realm/profile_fields/{field_id} (administrators), and
// PATCH/DELETE /users/me/profile_data (humans). Administrators set other
// users' values through PATCH /users/{user_id} (routes/users.ts).
import { createField, deleteField, removeOwnProfileData, reorderFields, updateField, updateOwnProfileData } from "../actions/custom-profile-fields.ts";
import { checkFieldDataShape, checkProfileDataElement, type ProfileValue } from "../domain/custom-profile-fields.ts";
import { pythonStrip } from "../domain/text.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { check, Param, param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { listApiFields } from "../queries/custom-profile-fields.ts";

/** typed_endpoint's StringConstraints(strip_whitespace=True): the label arrives stripped. */
const strippedString = () => new Param((raw, name) => pythonStrip(param.string().convert(raw, name)), "optional");

/** Json[ProfileFieldData] | None: null means none given. */
const fieldDataParam = () => param.json(check.nullable(checkFieldDataShape));

export const customProfileFieldRoutes = [
  defineRoute({
    method: "GET",
    path: "/realm/profile_fields",
    auth: "api",
    params: {},
    handler: async ({ services, realm }) => ({ custom_fields: await listApiFields(services.storage.db, realm.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/realm/profile_fields",
    auth: "api",
    adminOnly: true,
    params: {
      name: strippedString().default(""),
      hint: param.string().default(""),
      field_type: param.int().required(),
      field_data: fieldDataParam().default(null),
      display_in_profile_summary: param.bool().default(false),
      required: param.bool().default(false),
      editable_by_user: param.bool().default(true),
    },
    handler: async ({ services, realm }, p) => ({
      id: await createField(services, realm, {
        name: p.name,
        hint: p.hint,
        fieldType: p.field_type,
        fieldData: p.field_data ?? {},
        displayInProfileSummary: p.display_in_profile_summary,
        required: p.required,
        editableByUser: p.editable_by_user,
      }),
    }),
  }),

  defineRoute({
    method: "PATCH",
    path: "/realm/profile_fields",
    auth: "api",
    adminOnly: true,
    params: { order: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async ({ services, realm }, p) => {
      await reorderFields(services, realm, p.order);
    },
  }),

  defineRoute({
    method: "PATCH",
    path: "/realm/profile_fields/:field_id",
    auth: "api",
    adminOnly: true,
    params: {
      field_id: param.int().required(),
      name: strippedString(),
      hint: param.string(),
      field_data: fieldDataParam(),
      display_in_profile_summary: param.bool(),
      required: param.bool(),
      editable_by_user: param.bool(),
    },
    handler: async ({ services, realm }, p) => {
      await updateField(services, realm, p.field_id, {
        name: p.name,
        hint: p.hint,
        fieldData: p.field_data ?? undefined,
        displayInProfileSummary: p.display_in_profile_summary,
        required: p.required,
        editableByUser: p.editable_by_user,
      });
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/realm/profile_fields/:field_id",
    auth: "api",
    adminOnly: true,
    params: { field_id: param.int().required() },
    handler: async ({ services, realm }, p) => {
      await deleteField(services, realm, p.field_id);
    },
  }),

  defineRoute({
    method: "PATCH",
    path: "/users/me/profile_data",
    auth: "api",
    params: { data: param.json(check.list(checkProfileDataElement(false), { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async ({ services, realm, user }, p) => {
      await updateOwnProfileData(services, realm, user, p.data as { id: number; value: ProfileValue }[]);
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/users/me/profile_data",
    auth: "api",
    params: { data: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async ({ services, realm, user }, p) => {
      await removeOwnProfileData(services, realm, user, p.data);
    },
  }),
];
