// Custom profile fields (Zulip's actions/custom_profile_fields.py): an
// administrator's field definitions, and users' values. Every change of the
// definitions sends the whole list (`custom_profile_fields`) to every active
// user; every change of a value sends a `realm_user` update with
// `custom_profile_field` to every active user, as the other user updates do.
import {
  checkFieldDefinition,
  checkValueShape,
  DEFAULT_EXTERNAL_ACCOUNTS,
  FieldType,
  fieldNotFound,
  hasFieldData,
  isDefaultExternalField,
  isRenderable,
  labelTaken,
  MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS,
  notEditableByUser,
  summaryLimitReached,
  type FieldData,
  type ProfileValue,
} from "../domain/custom-profile-fields.ts";
import { isAdmin } from "../domain/roles.ts";
import { badRequest, humansOnly } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { getField, listApiFields } from "../queries/custom-profile-fields.ts";
import { markdownContextFor } from "../queries/markdown-context.ts";
import { listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { CustomProfileField, Realm, User } from "../storage/schema.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

/** The custom_profile_fields event: the organization's whole list, to every active user. */
async function queueFieldsEvent(trx: Trx, pending: PendingEvents, realmId: number): Promise<void> {
  const fields = await listApiFields(trx, realmId);
  const recipients = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "custom_profile_fields", fields }, recipients);
}

/** A realm_user update for one value; rendered_value only when there is one (Zulip omits it when empty). */
async function queueValueEvent(trx: Trx, pending: PendingEvents, realmId: number, userId: number, fieldId: number, value: string | null, rendered: string | null): Promise<void> {
  const field: Record<string, unknown> = { id: fieldId, value };
  if (rendered) field.rendered_value = rendered;
  const recipients = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "realm_user", op: "update", person: { user_id: userId, custom_profile_field: field } }, recipients);
}

async function countSummaryFields(trx: Trx, realmId: number, exceptId?: number): Promise<number> {
  let query = trx
    .selectFrom("custom_profile_fields")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("realm_id", "=", realmId)
    .where("display_in_profile_summary", "=", true);
  if (exceptId !== undefined) query = query.where("id", "<>", exceptId);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

async function checkLabelFree(trx: Trx, realmId: number, name: string, exceptId?: number): Promise<void> {
  let query = trx.selectFrom("custom_profile_fields").select("id").where("realm_id", "=", realmId).where("name", "=", name);
  if (exceptId !== undefined) query = query.where("id", "<>", exceptId);
  if (await query.executeTakeFirst()) throw labelTaken();
}

const parseFieldData = (stored: string): FieldData => (stored === "" ? {} : (JSON.parse(stored) as FieldData));

/** Python's == on JSON values: objects compare regardless of key order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export interface NewFieldInput {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: FieldData;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
}

/** POST /realm/profile_fields (administrators; checked by the route). Returns the new field's ID. */
export async function createField(services: Services, realm: Realm, input: NewFieldInput): Promise<number> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (input.displayInProfileSummary && (await countSummaryFields(trx, realm.id)) >= MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS) summaryLimitReached();
    checkFieldDefinition(input);
    let { name, hint } = input;
    let fieldData = hasFieldData(input.fieldType) ? JSON.stringify(input.fieldData) : "";
    if (isDefaultExternalField(input.fieldType, input.fieldData)) {
      // A known external account: its label and hint are the server's, its data only the subtype.
      const subtype = input.fieldData.subtype as string;
      ({ name, hint } = DEFAULT_EXTERNAL_ACCOUNTS[subtype]!);
      fieldData = JSON.stringify({ subtype });
    }
    await checkLabelFree(trx, realm.id, name);
    const { id } = await trx
      .insertInto("custom_profile_fields")
      .values({
        realm_id: realm.id,
        name,
        hint,
        field_type: input.fieldType,
        field_data: fieldData,
        display_in_profile_summary: input.displayInProfileSummary,
        required: input.required,
        editable_by_user: input.editableByUser,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    // A new field goes last: its order is its ID, as in Zulip.
    await trx.updateTable("custom_profile_fields").set({ sort_order: id }).where("id", "=", id).execute();
    await queueFieldsEvent(trx, pending, realm.id);
    return id;
  });
}

export interface FieldChange {
  name?: string | undefined;
  hint?: string | undefined;
  fieldData?: FieldData | undefined;
  displayInProfileSummary?: boolean | undefined;
  required?: boolean | undefined;
  editableByUser?: boolean | undefined;
}

/** PATCH /realm/profile_fields/{field_id}. Always sends the list, even when nothing changed (as Zulip). */
export async function updateField(services: Services, realm: Realm, fieldId: number, change: FieldChange): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const field = await getField(trx, realm.id, fieldId);
    if (!field) throw fieldNotFound(fieldId);
    if (change.displayInProfileSummary === true && (await countSummaryFields(trx, realm.id, field.id)) >= MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS) {
      summaryLimitReached();
    }
    const storedData = parseFieldData(field.field_data);
    if (isDefaultExternalField(field.field_type, storedData)) {
      // Only display_in_profile_summary (and the flags) may change; sending the current values is allowed.
      const changesDefinition =
        (change.name !== undefined && change.name !== field.name) ||
        (change.hint !== undefined && change.hint !== field.hint) ||
        (change.fieldData !== undefined && !sameJson(change.fieldData, storedData));
      if (changesDefinition) throw badRequest("Default custom field cannot be updated.");
    }
    checkFieldDefinition({
      name: change.name ?? field.name,
      hint: change.hint ?? field.hint,
      fieldType: field.field_type,
      fieldData: change.fieldData ?? storedData,
      displayInProfileSummary: change.displayInProfileSummary ?? field.display_in_profile_summary,
    });
    if (change.name !== undefined && change.name !== field.name) await checkLabelFree(trx, realm.id, change.name, field.id);

    const values: Partial<Pick<CustomProfileField, "name" | "hint" | "field_data" | "display_in_profile_summary" | "required" | "editable_by_user">> = {};
    if (change.name !== undefined) values.name = change.name;
    if (change.hint !== undefined) values.hint = change.hint;
    if (change.required !== undefined) values.required = change.required;
    if (change.editableByUser !== undefined) values.editable_by_user = change.editableByUser;
    if (change.displayInProfileSummary !== undefined) values.display_in_profile_summary = change.displayInProfileSummary;
    if (hasFieldData(field.field_type) && change.fieldData !== undefined) {
      if (field.field_type === FieldType.SELECT) await dropRemovedOptionValues(trx, pending, realm.id, field, storedData, change.fieldData);
      values.field_data = JSON.stringify(change.fieldData);
    }
    if (Object.keys(values).length > 0) await trx.updateTable("custom_profile_fields").set(values).where("id", "=", field.id).execute();
    await queueFieldsEvent(trx, pending, realm.id);
  });
}

/** Options removed from a list-of-options field: users who had chosen one lose the value (and are told). */
async function dropRemovedOptionValues(trx: Trx, pending: PendingEvents, realmId: number, field: CustomProfileField, before: FieldData, after: FieldData): Promise<void> {
  const removed = Object.keys(before).filter((key) => !Object.hasOwn(after, key));
  if (removed.length === 0) return;
  // field_data is an object of any size: its keys are looked up in chunks.
  const affected: { id: number; user_id: number }[] = [];
  for (const chunk of inChunks(removed)) {
    affected.push(...(await trx.selectFrom("custom_profile_field_values").select(["id", "user_id"]).where("field_id", "=", field.id).where("value", "in", chunk).execute()));
  }
  if (affected.length === 0) return;
  affected.sort((a, b) => a.user_id - b.user_id);
  for (const chunk of inChunks(affected.map((r) => r.id))) await trx.deleteFrom("custom_profile_field_values").where("id", "in", chunk).execute();
  for (const { user_id } of affected) await queueValueEvent(trx, pending, realmId, user_id, field.id, null, null);
}

/** DELETE /realm/profile_fields/{field_id}: the field and every user's value of it. */
export async function deleteField(services: Services, realm: Realm, fieldId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const field = await getField(trx, realm.id, fieldId);
    if (!field) throw fieldNotFound(fieldId);
    await trx.deleteFrom("custom_profile_field_values").where("field_id", "=", field.id).execute();
    await trx.deleteFrom("custom_profile_fields").where("id", "=", field.id).execute();
    await queueFieldsEvent(trx, pending, realm.id);
  });
}

/**
 * PATCH /realm/profile_fields: `order` lists field IDs in their new order and
 * must name every field (IDs of no field are ignored; a repeated ID takes its
 * last position, as Zulip's mapping does).
 */
export async function reorderFields(services: Services, realm: Realm, order: readonly number[]): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const position = new Map<number, number>();
    order.forEach((id, index) => position.set(id, index));
    const fields = await trx.selectFrom("custom_profile_fields").select(["id", "sort_order"]).where("realm_id", "=", realm.id).execute();
    if (!fields.every((f) => position.has(f.id))) throw badRequest("Invalid order mapping.");
    for (const f of fields) {
      const newOrder = position.get(f.id)!;
      if (newOrder !== f.sort_order) await trx.updateTable("custom_profile_fields").set({ sort_order: newOrder }).where("id", "=", f.id).execute();
    }
    await queueFieldsEvent(trx, pending, realm.id);
  });
}

/** check_valid_user_ids: every ID a user of the organization, active and human. */
async function checkPersonPickerIds(trx: Trx, realmId: number, ids: readonly number[]): Promise<void> {
  const users: { id: number; is_active: boolean; is_bot: boolean }[] = [];
  for (const chunk of inChunks([...new Set(ids)].filter(isStorableId))) {
    users.push(...(await trx.selectFrom("users").select(["id", "is_active", "is_bot"]).where("realm_id", "=", realmId).where("id", "in", chunk).execute()));
  }
  users.sort((a, b) => a.id - b.id);
  const found = new Set(users.map((u) => u.id));
  const invalid = ids.filter((id) => !found.has(id));
  if (invalid.length > 0) throw badRequest(`Invalid user IDs: ${invalid.join(", ")}`);
  for (const u of users) {
    if (!u.is_active) throw badRequest(`User with ID ${u.id} is deactivated`);
    if (u.is_bot) throw badRequest(`User with ID ${u.id} is a bot`);
  }
}

/** A field the actor may change on the target's profile: administrators any, others only editable_by_user ones. */
async function fieldForChange(trx: Trx, realmId: number, actor: User, fieldId: number): Promise<CustomProfileField> {
  const field = await getField(trx, realmId, fieldId);
  if (!field) throw fieldNotFound(fieldId);
  if (!isAdmin(actor.role) && !field.editable_by_user) throw notEditableByUser();
  return field;
}

export interface ValueUpdate {
  id: number;
  value: ProfileValue;
}

/**
 * Sets values on `target`'s profile inside the caller's transaction: every
 * entry is checked (the field exists, the actor may change it, the value fits
 * the field) before anything is written; unchanged values are skipped.
 */
export async function setProfileValues(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, actor: User, target: User, updates: readonly ValueUpdate[]): Promise<void> {
  const checked: { field: CustomProfileField; stored: string }[] = [];
  for (const update of updates) {
    const field = await fieldForChange(trx, realm.id, actor, update.id);
    const { stored, userIds } = checkValueShape(field.field_type, field.field_data, field.name, update.value);
    if (userIds !== undefined) await checkPersonPickerIds(trx, realm.id, userIds);
    checked.push({ field, stored });
  }
  for (const { field, stored } of checked) {
    const existing = await trx
      .selectFrom("custom_profile_field_values")
      .select(["id", "value"])
      .where("user_id", "=", target.id)
      .where("field_id", "=", field.id)
      .executeTakeFirst();
    if (existing && existing.value === stored) continue;
    const rendered = isRenderable(field.field_type)
      ? renderMarkdown(stored, await markdownContextFor(trx, services.config, realm.id, stored, { inlineImagePreview: false })).html
      : null;
    if (existing) {
      await trx.updateTable("custom_profile_field_values").set({ value: stored, rendered_value: rendered }).where("id", "=", existing.id).execute();
    } else {
      await trx.insertInto("custom_profile_field_values").values({ user_id: target.id, field_id: field.id, value: stored, rendered_value: rendered }).execute();
    }
    await queueValueEvent(trx, pending, realm.id, target.id, field.id, stored, rendered);
  }
}

/** Removes values from `target`'s profile inside the caller's transaction; a field without a value is no change. */
export async function removeProfileValues(trx: Trx, pending: PendingEvents, realm: Realm, actor: User, target: User, fieldIds: readonly number[]): Promise<void> {
  for (const fieldId of fieldIds) {
    const field = await fieldForChange(trx, realm.id, actor, fieldId);
    const deleted = await trx
      .deleteFrom("custom_profile_field_values")
      .where("user_id", "=", target.id)
      .where("field_id", "=", field.id)
      .returning("id")
      .execute();
    if (deleted.length > 0) await queueValueEvent(trx, pending, realm.id, target.id, field.id, null, null);
  }
}

/** PATCH /users/me/profile_data. */
export async function updateOwnProfileData(services: Services, realm: Realm, actor: User, updates: readonly ValueUpdate[]): Promise<void> {
  if (actor.is_bot) throw humansOnly();
  await inRealmTransaction(services, realm.id, (trx, pending) => setProfileValues(trx, services, pending, realm, actor, actor, updates));
}

/** DELETE /users/me/profile_data. */
export async function removeOwnProfileData(services: Services, realm: Realm, actor: User, fieldIds: readonly number[]): Promise<void> {
  if (actor.is_bot) throw humansOnly();
  await inRealmTransaction(services, realm.id, (trx, pending) => removeProfileValues(trx, pending, realm, actor, actor, fieldIds));
}

/**
 * PATCH /users/{user_id}'s profile_data, inside updateUser's transaction: an
 * entry whose value is null, "" or [] removes the value; the others set it.
 */
export async function applyAdminProfileData(
  trx: Trx,
  services: Services,
  pending: PendingEvents,
  realm: Realm,
  actor: User,
  target: User,
  entries: readonly { id: number; value: ProfileValue | null }[],
): Promise<void> {
  const removals = entries.filter((e) => e.value === null || e.value.length === 0).map((e) => e.id);
  const updates = entries.filter((e): e is ValueUpdate => e.value !== null && e.value.length > 0);
  await removeProfileValues(trx, pending, realm, actor, target, removals);
  await setProfileValues(trx, services, pending, realm, actor, target, updates);
}
