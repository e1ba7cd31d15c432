// Reading custom profile fields and users' values, and the one serializer of a
// field (Zulip's CustomProfileField.as_dict), shared by GET
// /realm/profile_fields, the custom_profile_fields event and /register.
import type { Kysely, Transaction } from "kysely";
import { isRenderable } from "../domain/custom-profile-fields.ts";
import { isStorableId } from "../storage/database.ts";
import type { CustomProfileField, Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiCustomProfileField {
  id: number;
  name: string;
  type: number;
  hint: string;
  /** JSON text, as Zulip sends it ("" for types without data). */
  field_data: string;
  order: number;
  required: boolean;
  editable_by_user: boolean;
  /** Present only when true, as in Zulip. */
  display_in_profile_summary?: true;
}

/** One entry of a user's profile_data. */
export interface ProfileDataEntry {
  value: string;
  rendered_value?: string;
}

export type ProfileData = Record<string, ProfileDataEntry>;

export function formatField(field: CustomProfileField): ApiCustomProfileField {
  const result: ApiCustomProfileField = {
    id: field.id,
    name: field.name,
    type: field.field_type,
    hint: field.hint,
    field_data: field.field_data,
    order: field.sort_order,
    required: field.required,
    editable_by_user: field.editable_by_user,
  };
  if (field.display_in_profile_summary) result.display_in_profile_summary = true;
  return result;
}

/** The organization's fields in display order (ties, which reordering never leaves, by ID). */
export async function listFields(db: Db, realmId: number): Promise<CustomProfileField[]> {
  return db.selectFrom("custom_profile_fields").selectAll().where("realm_id", "=", realmId).orderBy("sort_order").orderBy("id").execute();
}

export async function listApiFields(db: Db, realmId: number): Promise<ApiCustomProfileField[]> {
  return (await listFields(db, realmId)).map(formatField);
}

export async function getField(db: Db, realmId: number, fieldId: number): Promise<CustomProfileField | undefined> {
  if (!isStorableId(fieldId)) return undefined;
  return db.selectFrom("custom_profile_fields").selectAll().where("realm_id", "=", realmId).where("id", "=", fieldId).executeTakeFirst();
}

/**
 * Profile data of users of an organization, by user ID (users without values
 * are absent): each value, and its rendered HTML for Markdown-capable types.
 * `userIds` narrows the read to those users.
 */
export async function profileDataByUser(db: Db, realmId: number, userIds?: readonly number[]): Promise<Map<number, ProfileData>> {
  const ids = userIds?.filter(isStorableId);
  if (ids !== undefined && ids.length === 0) return new Map();
  let query = db
    .selectFrom("custom_profile_field_values as v")
    .innerJoin("custom_profile_fields as f", "f.id", "v.field_id")
    .select(["v.user_id", "v.field_id", "v.value", "v.rendered_value", "f.field_type"])
    .where("f.realm_id", "=", realmId);
  if (ids !== undefined) query = query.where("v.user_id", "in", ids);
  const rows = await query.orderBy("v.user_id").orderBy("f.sort_order").orderBy("f.id").execute();
  const result = new Map<number, ProfileData>();
  for (const row of rows) {
    let data = result.get(row.user_id);
    if (!data) result.set(row.user_id, (data = {}));
    data[String(row.field_id)] = isRenderable(row.field_type) ? { value: row.value, rendered_value: row.rendered_value ?? "" } : { value: row.value };
  }
  return result;
}

/** One user's profile data ({} without values). */
export async function profileDataOf(db: Db, realmId: number, userId: number): Promise<ProfileData> {
  return (await profileDataByUser(db, realmId, [userId])).get(userId) ?? {};
}
