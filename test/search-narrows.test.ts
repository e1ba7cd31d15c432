// Search narrows by sender: Zulip accepts a sender's API email, a user ID, and
// the real (delivery) address when the searcher may see it; a hidden real
// address stays an unknown user (BAD_NARROW), so it reveals nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { EmailVisibility } from "../src/domain/users.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let author: TestUser;
let messageId: number;
before(async () => {
  t = await startTestApp();
  author = await t.createUser(uniqueName("Author"), Role.MEMBER);
  await t.services.storage.db.updateTable("users").set({ email_address_visibility: EmailVisibility.ADMINS }).where("id", "=", author.id).execute();
  const channel = uniqueName("search");
  assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }], principals: [author.id, t.users.admin.id, t.users.member.id] }));
  messageId = assertSuccess(await t.api(author, "POST", "/messages", { type: "stream", to: channel, topic: "t", content: "hello" })).id;
});
after(() => t?.close());

const bySender = (user: TestUser, operand: string | number) =>
  t.api(user, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: "sender", operand }]) });

test("sender: with the real email works for a searcher who may see it", async () => {
  const ids = assertSuccess(await bySender(t.users.admin, author.email)).messages.map((m: { id: number }) => m.id);
  assert.deepEqual(ids, [messageId]);
  const upper = assertSuccess(await bySender(t.users.admin, author.email.toUpperCase())).messages.map((m: { id: number }) => m.id);
  assert.deepEqual(upper, [messageId]);
});

test("sender: with a hidden real email is an unknown user for others; the API email and ID work for everyone", async () => {
  assertError(await bySender(t.users.member, author.email), 400, "BAD_NARROW");
  const apiEmail = assertSuccess(await bySender(t.users.member, author.id)).messages[0].sender_email as string;
  assert.notEqual(apiEmail.toLowerCase(), author.email.toLowerCase());
  const ids = assertSuccess(await bySender(t.users.member, apiEmail)).messages.map((m: { id: number }) => m.id);
  assert.deepEqual(ids, [messageId]);
});
