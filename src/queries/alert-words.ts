import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";
import { inChunks } from "../storage/database.ts";

type Db = Kysely<Database> | Transaction<Database>;

export async function alertWordsOf(db: Db, userId: number): Promise<string[]> {
  const rows = await db.selectFrom("alert_words").select("word").where("user_id", "=", userId).orderBy("word_key").execute();
  return rows.map((r) => r.word);
}

/** Alert words of several users, for flagging a message's recipients. */
export async function alertWordsByUser(db: Db, userIds: readonly number[]): Promise<Map<number, string[]>> {
  const result = new Map<number, string[]>();
  if (userIds.length === 0) return result;
  for (const chunk of inChunks(userIds)) {
    const rows = await db.selectFrom("alert_words").select(["user_id", "word"]).where("user_id", "in", chunk).execute();
    for (const row of rows) result.set(row.user_id, [...(result.get(row.user_id) ?? []), row.word]);
  }
  return result;
}
